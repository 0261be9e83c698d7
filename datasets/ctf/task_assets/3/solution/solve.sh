#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
python3 - <<'EOF'
data = open('secret.bin', 'rb').read()
for key in range(256):
    plain = bytes(b ^ key for b in data)
    if plain.startswith(b'flag{'):
        print(plain.decode())
EOF
