#!/bin/bash
# Deploy skylark to the given environment (staging or production).
set -euo pipefail

ENVIRONMENT="${1:?usage: deploy.sh staging|production}"
TARGET="/srv/skylark"

echo "deploying to $ENVIRONMENT"
rsync -a --delete src/ "$TARGET/src/"
cp "configs/app.json" "$TARGET/app.json"
systemctl restart skylark
echo "done"
