"""Process and output helpers shared by the Python env's in-sandbox programs.

The host sends this text ahead of envs/python/driver.py and of envs/python/scorer.py, as one
program over stdin (envs/python/images.ts): the helpers are defined once, and neither program
is ever a file in the image an agent could replace.
"""

import os
import signal

# Bound when the program starts, before any agent code runs in a process forked from it: code
# that replaces os.kill, os.listdir, open or int in such a process (the scorer's submission
# process replays the agent's actions) does not change what these helpers call.
_write, _listdir, _kill, _open = os.write, os.listdir, os.kill, open
_int, _len, _set, _range, _memoryview = int, len, set, range, memoryview
_SIGSTOP, _SIGKILL = signal.SIGSTOP, signal.SIGKILL


def write_all(fd, data):
    view = _memoryview(data)
    while view:
        n = _write(fd, view)
        view = view[n:]


def process_table():
    """{pid: (ppid, state)} for every process visible in /proc."""
    table = {}
    for name in _listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with _open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        table[_int(name)] = (_int(fields[1]), fields[0])
    return table


def descendants(root):
    table = process_table()
    children = {}
    for pid, (ppid, state) in table.items():
        children.setdefault(ppid, []).append((pid, state))
    found, stack = [], [root]
    while stack:
        for pid, state in children.get(stack.pop(), []):
            found.append((pid, state))
            stack.append(pid)
    return found


def kill_strays(root, keep, killed=None):
    """Kills every live descendant of `root` not in `keep`: stop all first (a stopped
    process cannot fork), then kill; repeat until a pass finds none. Returns the count of
    processes killed; with `killed` (a set), of those in it too, each once: one killed by an
    earlier call may still be exiting, and is not counted again."""
    killed = _set() if killed is None else killed
    for _ in _range(100):
        live = [pid for pid, state in descendants(root) if pid not in keep and state != "Z"]
        if not live:
            break
        for sig in (_SIGSTOP, _SIGKILL):
            for pid in live:
                try:
                    _kill(pid, sig)
                except ProcessLookupError:
                    pass
        killed.update(live)
    return _len(killed)


def describe_status(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        hint = {
            "SIGKILL": " (the sandbox's memory limit, or killed)",
            "SIGSEGV": " (a crash in C code, e.g. recursion too deep for the C stack)",
        }.get(name, "")
        return f"killed by {name}{hint}"
    return f"exited with status {os.WEXITSTATUS(status)}"


def reap_all():
    """Reaps every child that has exited, without waiting for the others."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
