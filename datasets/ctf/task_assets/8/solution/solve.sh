#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
inode=$(fls -r -d disk.img | grep notes.txt.gz | sed -E 's/.*\* ([0-9]+).*/\1/')
icat disk.img "$inode" | gunzip | grep -o 'flag{[^}]*}'
