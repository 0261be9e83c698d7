#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
rev note.txt | tr 'A-Za-z' 'N-ZA-Mn-za-m'
