"""Scorer of the Python environment, run in a new sandbox the agent never touched.

The host starts `python3 -I -B -u -c <boot>` in a fresh sandbox of the env's image and
sends this program over stdin (it is never a file an agent could have replaced); then
frames `<byte length>\\n<JSON>` on stdin, and this process answers with frames
`\\x1eIC<nonce> <byte length>\\n<JSON>` on stdout, in this order:

  {"op": "hello", "nonce": str}                      -> {"ready": true}
  {"op": "gold", "id": n, "setup", "gold", "tests", "testTimeoutMs", "memoryBytes"}
        -> {"id": n, "gold": [outcome]}     each test in a child from a fresh namespace
  {"op": "pred", "id": n, "kind": "mbpp"|"apps", "history": [{"code", "timeoutMs"}], ...}
        -> {"id": n, "pred": [outcome]} or {"id": n, "results": [case]}

The gold runs (and its answer is sent) before any of the agent's code runs in this
sandbox. For `pred`, a *submission* process rebuilds the agent's interpreter by replaying
the actions it ran (its code, as data from the host), then runs each test in a child of
its own, as InterCode ran them in the agent's namespace. Every process the agent's code
leaves is killed; the submission process has a deadline; the sandbox is thrown away.
"""

import ast
import builtins
import ctypes
import hashlib
import io
import json
import linecache
import os
import resource
import select
import signal
import sys
import time
import traceback

# Bound before any agent code runs in a process forked from this one: replacing
# builtins.exec, json.dumps or io.StringIO there does not change what these names mean here.
_exec = builtins.exec
_dumps, _loads = json.dumps, json.loads
_StringIO = io.StringIO

PR_SET_CHILD_SUBREAPER = 36
MAX_RESULT_CHARS = 64 * 1024


def read_exact(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_frame(fd):
    """One `<length>\\n<JSON>` frame from fd, read unbuffered; None at EOF."""
    header = b""
    while not header.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            return None
        header += byte
    payload = read_exact(fd, int(header))
    return None if payload is None else _loads(payload.decode("utf-8"))


# ---------------------------------------------------------------- processes
# (write_all, process_table, descendants, kill_strays, describe_status, reap_all: sandbox_common.py, sent ahead of this program;
# check_value, checked_test, harness_code, trust_standard_library: checked_values.py, likewise)

def read_result(fd, deadline, limit):
    """Reads fd until it holds one whole frame, ends, passes `limit` bytes or `deadline`.
    Returns (data, why it stopped early: "time", "size" or None)."""
    data = b""
    while not complete_frame(data):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return data, "time"
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
        if len(data) > limit:
            return data, "size"
    return data, None


# ---------------------------------------------------------------- tests

def fresh_namespace():
    return {"__name__": "__main__", "__builtins__": builtins}


def clip(text):
    if len(text) <= MAX_RESULT_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
    return f"{text[:MAX_RESULT_CHARS]}... [{len(text)} characters in all, sha256 {digest}]"


def intercode_execute(code, namespace):
    """One statement block run as InterCode's Python server ran it: output captured at the
    Python level, stripped; an exception becomes {"error": "Error: <message>"}. The extra
    key `detail` names the exception (it is not compared)."""
    out, err = _StringIO(), _StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        _exec(code, namespace)
        result = {"output": out.getvalue().strip(), "error": err.getvalue().strip()}
    except BaseException as e:  # noqa: BLE001 - every failure is a result
        result = {"error": f"Error: {e}", "detail": traceback.format_exception_only(type(e), e)[-1].strip()}
    finally:
        sys.stdout, sys.stderr = saved
    return {k: clip(v) for k, v in result.items()}


def normalise_lines(text):
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def run_stdio_case(namespace, function, stdin_text, expected):
    """APPS: calls the submitted function with stdin holding the case's input; passed when
    the printed lines equal the expected ones (trailing whitespace ignored)."""
    out = _StringIO()
    saved = sys.stdin, sys.stdout
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin_text.encode("utf-8")), encoding="utf-8")
    sys.stdout = out
    try:
        target = namespace.get(function)
        if not callable(target):
            raise NameError(f"name '{function}' is not a defined function")
        target()
        error = ""
    except BaseException as e:  # noqa: BLE001
        error = traceback.format_exception_only(type(e), e)[-1].strip()
    finally:
        sys.stdin, sys.stdout = saved
    output = out.getvalue()
    passed = error == "" and normalise_lines(output) == normalise_lines(expected)
    return {"passed": passed, "output": clip(output), "error": clip(error)}


def complete_frame(data):
    newline = data.find(b"\n")
    return newline > 0 and data[:newline].isdigit() and len(data) - newline - 1 >= int(data[:newline])


def failure(case, message):
    if case[0] == "apps":
        return {"passed": False, "output": "", "error": message}
    return {"error": f"Error: {message}", "detail": message}


def run_case(namespace, prelude, case, limit, memory_bytes, reaper, keep):
    """Runs one test in a child forked from this process (its own time and address-space
    limit); every process it leaves is killed. Returns its outcome."""
    started = time.monotonic()
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError as e:
        os.close(read_end)
        os.close(write_end)
        kill_strays(reaper, keep)
        return failure(case, f"the test process could not start ({e.strerror})")
    if pid == 0:
        test_pid = os.getpid()
        try:
            os.close(read_end)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
            for code in prelude:
                intercode_execute(code, namespace)
            if case[0] == "apps":
                result = run_stdio_case(namespace, case[1], case[2], case[3])
            else:
                result = intercode_execute(checked_test(case[1], namespace) or case[1], namespace)
            if os.getpid() == test_pid:
                payload = _dumps(result).encode("utf-8")
                write_all(write_end, str(len(payload)).encode() + b"\n" + payload)
        finally:
            os._exit(0)
    os.close(write_end)
    # The result is length-prefixed: a process the test forked may hold the pipe open.
    data, stopped = read_result(read_end, started + limit, 8 * MAX_RESULT_CHARS + 4096)
    timed_out = stopped == "time"
    os.close(read_end)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    strays = kill_strays(reaper, keep)
    if timed_out:
        return failure(case, f"timed out after {limit:g} s and was killed")
    try:
        result = _loads(data[data.index(b"\n") + 1:].decode("utf-8"))
    except ValueError:
        return failure(case, f"the test process {describe_status(status)} before reporting a result")
    if strays:
        return failure(case, f"the test left {strays} process(es) running; they were killed")
    return result


# ---------------------------------------------------------------- the agent's interpreter, rebuilt

class replay_limit:
    """Interrupts one replayed action after its time limit, as the driver's SIGINT did."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        def expire(signum, frame):
            raise KeyboardInterrupt
        signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        return False


def replay(history, namespace, scorer_pid):
    """Runs the agent's actions in `namespace` as the driver's worker ran them: an action's
    last expression is evaluated (and its value printed, to nowhere); failures are ignored;
    after each, the processes it left are killed, as the driver killed them."""
    me = os.getpid()
    for number, action in enumerate(history, 1):
        code = action["code"]
        filename = f"<action {number}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            with replay_limit(action["timeoutMs"] / 1000):
                tree = ast.parse(code, filename, "exec")
                last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
                body = tree.body[:-1] if last else tree.body
                # Looked up at each action, as the agent's interpreter did: an action that
                # replaced exec changes what the later ones do, there as here.
                exec(compile(ast.Module(body=body, type_ignores=[]), filename, "exec"), namespace)
                if last:
                    value = eval(compile(ast.Expression(body=last.value), filename, "eval"), namespace)
                    if value is not None:
                        sys.stdout.write(f"{value!r}\n")
        except BaseException:  # noqa: BLE001 - as in the agent's interpreter, a failed action is output
            pass
        finally:
            if os.getpid() != me:  # a process the action forked: it never goes on replaying
                os._exit(0)
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001
                pass
            kill_strays(scorer_pid, {scorer_pid, me})


def submission_cases(request):
    if request["kind"] == "apps":
        return [("apps", request["submitted"], c["input"], c["output"]) for c in request["cases"]]
    return [("mbpp", t) for t in request["tests"]]


def run_submission(request, scorer_pid, write_end):
    """In the submission process: rebuild the agent's namespace, run each test in a child, report."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.stdin = open(os.devnull)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)
    memory = request["memoryBytes"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    me = os.getpid()
    namespace = fresh_namespace()
    replay(request["history"], namespace, scorer_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    limit = request["testTimeoutMs"] / 1000
    prelude = [] if request["kind"] == "apps" else [f"{request['entry']} = {request['submitted']}", harness_code(request["setup"])]
    results = [run_case(namespace, prelude, case, limit, memory, scorer_pid, {scorer_pid, me}) for case in submission_cases(request)]
    if os.getpid() == me:
        payload = _dumps(results).encode("utf-8")
        write_all(write_end, str(len(payload)).encode() + b"\n" + payload)


def valid_outcomes(results, cases):
    """The submission process's answer, checked: a list of outcomes of the right shape."""
    if not isinstance(results, list) or len(results) != len(cases):
        return None
    for result, case in zip(results, cases):
        if not isinstance(result, dict):
            return None
        fields = ("passed", "output", "error") if case[0] == "apps" else ("output", "error", "detail")
        if any(k not in fields for k in result):
            return None
        if any(not isinstance(v, bool if k == "passed" else str) for k, v in result.items()):
            return None
        if case[0] == "apps" and len(result) != 3:
            return None
        for k in ("output", "error", "detail"):
            if k in result:
                result[k] = clip(result[k])
    return results


def score_submission(request, scorer_pid, channel):
    cases = submission_cases(request)
    replay_seconds = sum(a["timeoutMs"] / 1000 + 1 for a in request["history"])
    deadline = time.monotonic() + replay_seconds + len(cases) * (request["testTimeoutMs"] / 1000 + 2) + 5
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            for fd in channel:  # the host's channel stays out of the agent's reach
                os.close(fd)
            run_submission(request, scorer_pid, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    data, stopped = read_result(read_end, deadline, len(cases) * (8 * MAX_RESULT_CHARS + 4096) + 4096)
    why = {"time": "did not finish in time", "size": "sent more than a result"}.get(stopped)
    os.close(read_end)
    kill_strays(scorer_pid, {scorer_pid})
    status = 0
    try:
        status = os.waitpid(pid, 0)[1]
    except ChildProcessError:
        pass
    reap_all()
    results = None
    if why is None:
        try:
            results = valid_outcomes(_loads(data[data.index(b"\n") + 1:].decode("utf-8")), cases)
        except ValueError:
            results = None
        if results is None:
            why = "sent no valid result" if data else f"{describe_status(status)} before reporting a result"
    if results is None:
        results = [failure(c, f"the submission's interpreter (its actions replayed) {why}") for c in cases]
    return results


def score_gold(request, scorer_pid):
    limit = request["testTimeoutMs"] / 1000
    memory = request["memoryBytes"]
    namespace = fresh_namespace()
    prelude = [harness_code(request["setup"]), harness_code(request["gold"])]
    return [run_case(namespace, prelude, ("mbpp", t), limit, memory, scorer_pid, {scorer_pid})
            for t in request["tests"]]


def serve():
    trust_standard_library()
    pid = os.getpid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.set_inheritable(requests, False)
    os.set_inheritable(replies, False)
    hello = read_frame(requests)
    prefix = b"\x1eIC" + hello["nonce"].encode() + b" "

    def reply(obj):
        payload = _dumps(obj).encode("utf-8")
        write_all(replies, prefix + str(len(payload)).encode() + b"\n" + payload)

    reply({"ready": True})
    while True:
        request = read_frame(requests)
        if request is None:
            return
        if request["op"] == "gold":
            reply({"id": request["id"], "gold": score_gold(request, pid)})
        else:
            results = score_submission(request, pid, (requests, replies))
            reply({"id": request["id"], ("results" if request["kind"] == "apps" else "pred"): results})


serve()
