#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
python3 - <<'EOF'
import io, zipfile
data = open('firmware.bin', 'rb').read()
start = data.find(b'PK\x03\x04')
end = data.find(b'PK\x05\x06', start) + 22
print(zipfile.ZipFile(io.BytesIO(data[start:end])).read('config/flag.txt').decode().strip())
EOF
