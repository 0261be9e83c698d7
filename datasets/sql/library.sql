-- The built-in SQL dataset's database: a small public library network. Portable SQL
-- (MariaDB and SQLite both load it as is): plain types, dates as ISO text.
CREATE TABLE branch (
  branch_id INTEGER PRIMARY KEY,
  name VARCHAR(40) NOT NULL,
  city VARCHAR(30) NOT NULL,
  opened_year INTEGER NOT NULL
);
CREATE TABLE author (
  author_id INTEGER PRIMARY KEY,
  name VARCHAR(60) NOT NULL,
  country VARCHAR(30) NOT NULL,
  birth_year INTEGER
);
CREATE TABLE book (
  book_id INTEGER PRIMARY KEY,
  title VARCHAR(80) NOT NULL,
  author_id INTEGER NOT NULL REFERENCES author (author_id),
  genre VARCHAR(20) NOT NULL,
  pages INTEGER NOT NULL,
  published_year INTEGER NOT NULL,
  price REAL NOT NULL
);
CREATE TABLE member (
  member_id INTEGER PRIMARY KEY,
  name VARCHAR(60) NOT NULL,
  home_branch_id INTEGER NOT NULL REFERENCES branch (branch_id),
  joined VARCHAR(10) NOT NULL,
  age INTEGER NOT NULL
);
CREATE TABLE copy (
  copy_id INTEGER PRIMARY KEY,
  book_id INTEGER NOT NULL REFERENCES book (book_id),
  branch_id INTEGER NOT NULL REFERENCES branch (branch_id),
  shelf VARCHAR(6) NOT NULL
);
CREATE TABLE loan (
  loan_id INTEGER PRIMARY KEY,
  copy_id INTEGER NOT NULL REFERENCES copy (copy_id),
  member_id INTEGER NOT NULL REFERENCES member (member_id),
  loaned VARCHAR(10) NOT NULL,
  returned VARCHAR(10),
  fine REAL NOT NULL
);

INSERT INTO branch VALUES
  (1, 'Central', 'Lisbon', 1961),
  (2, 'Riverside', 'Porto', 1984),
  (3, 'Hillcrest', 'Lisbon', 1999),
  (4, 'Harbour', 'Faro', 2008),
  (5, 'Old Town', 'Coimbra', 1972);

INSERT INTO author VALUES
  (1, 'Ines Duarte', 'Portugal', 1948),
  (2, 'Tomas Keller', 'Germany', 1962),
  (3, 'Amara Okafor', 'Nigeria', 1975),
  (4, 'Lena Varga', 'Hungary', 1981),
  (5, 'Jonas Berg', 'Sweden', 1955),
  (6, 'Clara Mendes', 'Brazil', 1990),
  (7, 'Hiro Tanaka', 'Japan', 1969),
  (8, 'Rui Sousa', 'Portugal', NULL);

INSERT INTO book VALUES
  (1, 'The Salt Road', 1, 'history', 412, 1989, 24.5),
  (2, 'Harbour Lights', 1, 'novel', 288, 1995, 18.0),
  (3, 'Quiet Machines', 2, 'science', 340, 2004, 32.0),
  (4, 'Numbers at Dawn', 2, 'science', 256, 2011, 29.5),
  (5, 'River of Names', 3, 'novel', 390, 2009, 21.0),
  (6, 'Market Day', 3, 'novel', 210, 2015, 16.5),
  (7, 'The Glass Orchard', 4, 'poetry', 96, 2012, 12.0),
  (8, 'Winter Letters', 4, 'poetry', 120, 2018, 14.0),
  (9, 'Northern Tides', 5, 'history', 505, 1991, 35.0),
  (10, 'Iron and Pine', 5, 'history', 460, 1999, 27.0),
  (11, 'Small Hours', 6, 'novel', 232, 2020, 19.5),
  (12, 'Paper Cranes', 7, 'novel', 198, 2001, 15.0),
  (13, 'Signals', 7, 'science', 310, 2016, 31.0),
  (14, 'A Field Guide to Clouds', 7, 'science', 150, 2021, 22.0),
  (15, 'Coastal Recipes', 8, 'cooking', 180, 2019, 25.0);

INSERT INTO member VALUES
  (1, 'Ana Lima', 1, '2015-03-02', 34),
  (2, 'Bruno Costa', 1, '2018-07-19', 52),
  (3, 'Carla Reis', 2, '2016-01-11', 27),
  (4, 'Diogo Alves', 3, '2020-09-30', 19),
  (5, 'Eva Martins', 2, '2012-05-05', 61),
  (6, 'Filipe Nunes', 4, '2021-02-14', 45),
  (7, 'Gabriela Rocha', 1, '2019-11-23', 38),
  (8, 'Hugo Pinto', 5, '2017-04-08', 29),
  (9, 'Isabel Faria', 3, '2022-06-01', 73),
  (10, 'Joao Tavares', 5, '2014-10-17', 41);

INSERT INTO copy VALUES
  (1, 1, 1, 'H-01'), (2, 1, 2, 'H-07'), (3, 2, 1, 'N-03'), (4, 3, 1, 'S-02'),
  (5, 3, 3, 'S-11'), (6, 4, 2, 'S-05'), (7, 5, 1, 'N-08'), (8, 5, 4, 'N-01'),
  (9, 6, 3, 'N-12'), (10, 7, 5, 'P-01'), (11, 8, 5, 'P-02'), (12, 9, 1, 'H-02'),
  (13, 10, 2, 'H-09'), (14, 11, 3, 'N-15'), (15, 12, 4, 'N-04'), (16, 13, 1, 'S-07'),
  (17, 14, 2, 'S-08'), (18, 15, 4, 'C-01'), (19, 2, 3, 'N-20'), (20, 11, 1, 'N-09');

INSERT INTO loan VALUES
  (1, 1, 1, '2023-01-05', '2023-01-20', 0.0),
  (2, 3, 1, '2023-02-01', '2023-02-28', 1.5),
  (3, 4, 2, '2023-01-10', '2023-01-24', 0.0),
  (4, 7, 3, '2023-03-03', NULL, 0.0),
  (5, 6, 3, '2023-03-15', '2023-04-20', 4.0),
  (6, 9, 4, '2023-04-01', '2023-04-10', 0.0),
  (7, 10, 8, '2023-02-11', '2023-02-25', 0.0),
  (8, 11, 8, '2023-05-02', NULL, 0.0),
  (9, 12, 2, '2023-05-20', '2023-06-30', 3.0),
  (10, 14, 4, '2023-06-02', '2023-06-16', 0.0),
  (11, 15, 6, '2023-06-10', '2023-06-12', 0.0),
  (12, 18, 6, '2023-07-01', NULL, 0.0),
  (13, 16, 7, '2023-07-04', '2023-07-30', 0.5),
  (14, 20, 7, '2023-08-09', '2023-08-19', 0.0),
  (15, 2, 5, '2023-08-15', '2023-09-01', 0.0),
  (16, 13, 5, '2023-09-03', '2023-10-20', 5.5),
  (17, 1, 10, '2023-09-12', '2023-09-26', 0.0),
  (18, 5, 4, '2023-10-01', NULL, 0.0),
  (19, 7, 1, '2023-10-15', '2023-10-29', 0.0),
  (20, 19, 3, '2023-11-02', '2023-11-10', 0.0),
  (21, 3, 7, '2023-11-20', '2023-12-22', 2.0),
  (22, 8, 6, '2023-12-01', '2023-12-05', 0.0);
