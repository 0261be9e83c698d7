#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
pdftotext report.pdf - | grep -o 'flag{[^}]*}'
