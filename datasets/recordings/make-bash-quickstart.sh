#!/usr/bin/env bash
# Remakes bash-quickstart.json, the recorded "model" of docs/quickstart-llm.md, with the
# project's own commands: the 45 built-in bash tasks played with their golds, except the
# tasks bash-quickstart-wrong.jsonl plans other actions for (wrong answers, one recovered
# after a wrong first try), played for real in sandboxes so every observation and reward is
# what the env gives; then exported to InterCode's log layout, which `intercode mock-llm
# --replay` serves. Run from anywhere, with an engine and the bash image (npx intercode setup).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

npx intercode collect --env bash --policy gold --out "$work/gold.jsonl"
npx intercode collect --env bash --policy replay:datasets/recordings/bash-quickstart-wrong.jsonl --out "$work/wrong.jsonl"
# Every task once: its wrong play where there is one, else its gold play.
node -e '
  const { readFileSync } = require("node:fs");
  const lines = (file) => readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
  const wrong = new Map(lines(process.argv[2]).map((e) => [e.task_id, e]));
  const all = lines(process.argv[1]).map((e) => wrong.get(e.task_id) ?? e);
  for (const e of all.sort((a, b) => Number(a.task_id) - Number(b.task_id))) console.log(JSON.stringify(e));
' "$work/gold.jsonl" "$work/wrong.jsonl" > "$work/recorded.jsonl"
npx intercode export "$work/recorded.jsonl" --format intercode --out datasets/recordings/bash-quickstart.json
