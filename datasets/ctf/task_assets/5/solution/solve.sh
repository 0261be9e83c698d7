#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
python3 - <<'EOF'
import hashlib
from Crypto.Cipher import AES
data = open('flag.enc', 'rb').read()
for pin in range(10000):
    key = hashlib.sha256(f'{pin:04d}'.encode()).digest()[:16]
    plain = AES.new(key, AES.MODE_ECB).decrypt(data)
    if plain.startswith(b'flag{'):
        print(plain[:-plain[-1]].decode())
EOF
