#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
exiftool -s3 -UserComment photo.jpg | base64 -d; echo
