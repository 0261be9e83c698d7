#!/bin/bash
# Run from the task's folder; prints the flag.
set -euo pipefail
tshark -r capture.pcap -T fields -e dns.qry.name 2>/dev/null | grep cdn-sync | sort | cut -d. -f1 | cut -d- -f2 | tr -d '\n' | xxd -r -p; echo
