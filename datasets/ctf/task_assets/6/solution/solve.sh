#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
gdb -q -batch -ex 'break memcmp' -ex 'run < /dev/null' -ex 'x/s $rsi' ./checker 2>/dev/null | grep -o 'flag{[^}]*}'
