#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
python3 -c 'import base64; print(base64.b32decode("".join(chr(int(x)) for x in open("transmission.txt").read().split())).decode())'
