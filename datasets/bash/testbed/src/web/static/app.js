fetch('/api/stations')
  .then((res) => res.json())
  .then((stations) => {
    const table = document.getElementById('stations');
    for (const s of stations) {
      const row = table.insertRow();
      row.insertCell().textContent = s.id;
      row.insertCell().textContent = s.name;
    }
  });
