#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
xxd -r -p message.txt | base64 -d | base64 -d | base64 -d; echo
