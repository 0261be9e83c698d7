#!/bin/bash
# Archive the data folder; run from cron at midnight.
set -eu

STAMP="$(date +%Y%m%d)"
tar -czf "/var/backups/skylark-$STAMP.tar.gz" data/
echo "$(date '+%F %T') backup.sh: archived data/ to /var/backups/skylark-$STAMP.tar.gz" >> logs/cron.log
