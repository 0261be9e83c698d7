# The bash verifier of an exported task, InterCode's reward as far as the final container
# shows it: 0.01 + file diff (0.33·(1 − erf(#changes only one side made))) + file contents
# (0.33 × the share of paths both added whose md5 sums agree) + answer (0.33 × TF-IDF cosine
# of the agent's answer file and the gold command's output), each rounded to 2 places. The
# gold's changes, sums and output were read when the task was exported, in a new sandbox
# of the same image. `git status` runs at / (the image's repository) as the bash env's probe
# runs it; the folders Harbor's verifier and oracle add (/tests, /logs, /solution) are not counted.

import math
import re
import subprocess

expected = read_json("expected.json")
NOT_COUNTED = {"tests/", "logs/", "solution/"}
GIT_SETTINGS = ["core.excludesFile=/dev/null", "core.attributesFile=/dev/null", "core.hooksPath=/dev/null",
                "core.fsmonitor=false", "core.untrackedCache=false", "status.showUntrackedFiles=normal"]
PROBE_ENV = {"PATH": "/usr/bin", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ATTR_NOSYSTEM": "1"}


def probe(argv):
    return subprocess.run(argv, cwd="/", env=PROBE_ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout.decode("utf-8", "replace")


def parse_git_status(status):
    words = status.split()
    return [(words[i + 1], words[i]) for i in range(0, len(words) - 1, 2)]


def distinct(changes):
    out = {}
    for path, kind in changes:
        out.setdefault((kind, path), (path, kind))
    return out


def md5(path, mode):
    if mode == "intercode" and "." not in path:
        return "md5deep: command not found"
    if mode == "strict":
        script = 'if [ -d "$1" ]; then cd "$1" && find . -type f -print0 | sort -z | xargs -0r md5sum; else md5sum "$1"; fi 2>&1'
        return probe(["bash", "-c", script, "sum", path])
    return probe(["md5sum", path])


TOKEN = re.compile(r"(?u)\b\w\w+\b")


def tfidf_cosine(a, b):
    """scikit-learn's TfidfVectorizer().fit_transform([a, b]), entry [0][1] of m·mᵀ, in its order of operations."""
    order, counts = {}, []
    for text in (a, b):
        count = {}
        for token in TOKEN.findall(text.lower()):
            order.setdefault(token, len(order))
            count[token] = count.get(token, 0) + 1
        counts.append(count)
    if not order:
        raise ValueError("empty vocabulary")
    rows = []
    for count in counts:
        row = []
        for term in sorted(count, key=lambda t: -order[t]):
            df = sum(1 for c in counts if term in c) + 1
            row.append((term, count[term] * (math.log(3 / df) + 1)))
        total = 0.0
        for _, weight in row:
            total += weight * weight
        if total != 0:
            norm = math.sqrt(total)
            row = [(term, weight / norm) for term, weight in row]
        rows.append(row)
    other = dict(rows[1])
    dot = 0.0
    for term, weight in rows[0]:
        if term in other:
            dot += weight * other[term]
    return dot


def answer_similarity(agent, gold):
    if agent is not None and gold is not None:
        try:
            return tfidf_cosine(agent, gold)
        except ValueError:
            pass
    return 1 if agent == gold else 0


git = ["git", "--no-optional-locks"] + [arg for s in GIT_SETTINGS for arg in ("-c", s)] + ["status", "--short"]
agent_changes = [c for c in parse_git_status(probe(git)) if not (c[1] == "??" and c[0] in NOT_COUNTED)]
gold_changes = [tuple(c) for c in expected["changes"]]
agent_set, gold_set = distinct(agent_changes), distinct(gold_changes)
miss = [c for k, c in gold_set.items() if k not in agent_set]
extra = [c for k, c in agent_set.items() if k not in gold_set]
file_diff = round(0.33 * (1 - math.erf(len(miss) + len(extra))), 2)

file_changes = 0.33
same = [c for k, c in agent_set.items() if k in gold_set and c[1] in ("A", "??", "C")]
if same:
    gold_hashes = expected["hashes"]
    correct = sum(1 for path, _ in same if md5(path, expected["hashMode"]).strip() == (gold_hashes.get(path) or "").strip())
    file_changes = round(0.33 * (correct / len(same)), 2)

similarity = answer_similarity(read_answer(expected["answer"]), expected["observation"])
answer = round(0.33 * similarity, 2)
reward = 0.01
reward += file_diff
reward += file_changes
reward += answer
write_reward({"reward": reward, "file_diff": file_diff, "file_changes": file_changes, "answer_similarity": answer})
