#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
python3 - <<'EOF'
import gmpy2
v = dict(line.split(' = ') for line in open('values.txt').read().splitlines())
m, exact = gmpy2.iroot(gmpy2.mpz(v['c']), int(v['e']))
assert exact
print(int(m).to_bytes((int(m).bit_length() + 7) // 8, 'big').decode())
EOF
