#!/usr/bin/env bash
# Verifies the gold commands of datasets/bash/tasks.json in real containers.
#
# Every gold runs twice, each time in a fresh container (`docker run --rm --network none`)
# of a plain Debian bookworm image, on a fresh copy of testbed/ at /testbed, from `/`.
# The two runs give every file a different modification time, so a gold that depends on
# mtimes shows up as a difference. A gold passes when
#   - it exits 0 both times,
#   - it prints something or changes /testbed (paths, types, permissions, contents),
#   - both runs print exactly the same (stdout and stderr together) and leave /testbed
#     in the same state (tar archives are compared by their member lists, because their
#     bytes embed the member mtimes).
#
# Usage: datasets/bash/check-golds.sh [IMAGE]    (default: intercode-dev/rootfs:scratch)
#        ONLY=7 datasets/bash/check-golds.sh     (check only task 7, 0-based)
# Needs: docker and node (to read tasks.json). Exits non-zero when any gold fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
image="${1:-intercode-dev/rootfs:scratch}"
tasks="$here/tasks.json"

# The script run inside the container. It prints: exit code, whether /testbed changed,
# the output, and the state of /testbed after the gold.
read -r -d '' runner <<'EOF' || true
cp -a /src /testbed
find /testbed -exec touch -h -d "@$STAMP" {} +
state() {
  cd /testbed || exit 1
  find . -printf '%y %m %p\n' | LC_ALL=C sort
  find . -type f ! -name '*.tar' ! -name '*.tar.gz' ! -name '*.tgz' -exec md5sum {} + | LC_ALL=C sort -k2
  find . -type f \( -name '*.tar' -o -name '*.tar.gz' -o -name '*.tgz' \) | LC_ALL=C sort |
    while IFS= read -r a; do echo "archive $a:"; tar -tf "$a" | LC_ALL=C sort; done
}
before="$(state)"
cd /
set +e
out="$(bash -c "$GOLD" 2>&1)"
rc=$?
set -e
after="$(state)"
echo "exit=$rc"
[ "$before" = "$after" ] && echo "changed=no" || echo "changed=yes"
echo "--- output"
printf '%s\n' "$out"
echo "--- state"
printf '%s\n' "$after"
EOF

run_gold() { # $1 gold, $2 mtime stamp
  docker run --rm --network none --label intercode-dev.check-golds=1 \
    -v "$here/testbed:/src:ro" -e GOLD="$1" -e STAMP="$2" "$image" bash -c "$runner"
}

count="$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).length)' "$tasks")"
gold_of() {
  node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[+process.argv[2]].gold)' \
    "$tasks" "$1"
}

passed=0 failed=0 changes=0
for ((i = 0; i < count; i++)); do
  if [ -n "${ONLY:-}" ] && [ "$ONLY" != "$i" ]; then continue; fi
  gold="$(gold_of "$i")"
  first="$(run_gold "$gold" 946684800)"   # 2000-01-01
  second="$(run_gold "$gold" 1600000000)" # 2020-09-13
  output="$(sed -n '/^--- output$/,/^--- state$/p' <<<"$first" | sed '1d;$d')"
  problem=""
  if ! grep -qx 'exit=0' <<<"$first" || ! grep -qx 'exit=0' <<<"$second"; then
    problem="non-zero exit"
  elif [ "$first" != "$second" ]; then
    problem="the two runs differ"
  elif [ -z "$output" ] && grep -qx 'changed=no' <<<"$first"; then
    problem="no output and no file-system change"
  fi
  if [ -n "$problem" ]; then
    failed=$((failed + 1))
    echo "FAIL task $i: $problem"
    echo "  gold: $gold"
    diff <(echo "$first") <(echo "$second") | sed 's/^/  /' | head -n 20 || true
    sed -n '/^--- output$/,/^--- state$/p' <<<"$first" | head -n 10 | sed 's/^/  /'
  else
    passed=$((passed + 1))
    kind="output"
    if grep -qx 'changed=yes' <<<"$first"; then kind="changes /testbed"; changes=$((changes + 1)); fi
    lines=0
    if [ -n "$output" ]; then lines="$(grep -c '' <<<"$output")"; fi
    printf 'ok   task %2d  %-16s %3d output lines\n' "$i" "$kind" "$lines"
  fi
done
echo "check-golds: $passed passed, $failed failed ($changes change the file system)"
[ "$failed" -eq 0 ]
