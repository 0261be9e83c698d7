"""Helpers of the verifiers `intercode export --format harbor` writes (sent ahead of each
env's verify program as one file, tests/verify.py). Run by Harbor's verifier as root, after
the agent has finished: the agent's answer is read only from a regular file at exactly the
path the instruction names (a link on the way, to /tests for one, is no answer)."""

import json
import os
import stat

VERIFIER_LOGS = "/logs/verifier"


def read_answer(path, limit=1 << 20):
    """The text of the regular file at exactly `path` (no symbolic link anywhere on the way),
    its first `limit` bytes; None when there is no such file."""
    try:
        if os.path.realpath(path) != path:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = b""
        while len(data) < limit:
            chunk = os.read(fd, limit - len(data))
            if not chunk:
                break
            data += chunk
        return data.decode("utf-8", "replace")
    finally:
        os.close(fd)


def write_reward(parts):
    """reward.json: the reward and its named parts."""
    with open(os.path.join(VERIFIER_LOGS, "reward.json"), "w") as out:
        json.dump(parts, out)


def read_json(name):
    with open(os.path.join("/tests", name)) as f:
        return json.load(f)
