#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
work=$(mktemp -d)
tar -xzf bundle.tar.gz -C "$work"
tar -xjf "$work/stage2.tar.bz2" -C "$work"
pin=$(fcrackzip -u -c 1 -l 4-4 "$work/stage2/vault.zip" | sed -n 's/.*pw == //p')
unzip -p -P "$pin" "$work/stage2/vault.zip" flag.txt
