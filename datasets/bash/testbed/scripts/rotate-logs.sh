#!/bin/bash
# Keep one old copy of the application log.
set -eu

cd "$(dirname "$0")/../logs"
if [ -s app.log ]; then
    mv app.log app.log.1
    : > app.log
fi
