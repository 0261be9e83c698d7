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
import gc
import hashlib
import hmac
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
# builtins.exec, io.StringIO, os.read or json's encoder there does not change what these names
# mean here. (json.loads, which goes through json's replaceable default decoder, reads only the
# host's requests and writes its replies, in this process, where no agent code runs.)
_exec = builtins.exec
_dumps, _loads = json.dumps, json.loads
_StringIO = io.StringIO
_fork, _pipe, _close, _read, _kill, _waitpid = os.fork, os.pipe, os.close, os.read, os.kill, os.waitpid
_getpid, _getppid, _exit, _urandom = os.getpid, os.getppid, os._exit, os.urandom
_select, _monotonic, _sleep = select.select, time.monotonic, time.sleep
_sha256, _same_digest = hashlib.sha256, hmac.compare_digest
_settrace, _setprofile, _gettrace, _getprofile = sys.settrace, sys.setprofile, sys.gettrace, sys.getprofile
_monitoring = getattr(sys, "monitoring", None)
_gc_disable, _gc_enable, _gc_isenabled, _gc_callbacks = gc.disable, gc.enable, gc.isenabled, gc.callbacks
_signal, _getsignal, _setitimer = signal.signal, signal.getsignal, signal.setitimer
_SIG_DFL, _SIG_IGN, _SIGKILL = signal.SIG_DFL, signal.SIG_IGN, signal.SIGKILL
_SIGNALS = tuple(s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP))
_ITIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_type, _len, _int, _range, _str, _bool, _list, _dict = type, len, int, range, str, bool, list, dict
_encode_string = json.encoder.encode_basestring_ascii
_scan_json = json.scanner.make_scanner(json.JSONDecoder())

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

def read_until(fd, data, enough, deadline, limit):
    """Reads fd onto `data` until enough(data), end of file, more than `limit` bytes or
    `deadline`. Returns (data, why it stopped early: "time", "size", "eof" or None)."""
    while not enough(data):
        remaining = deadline - _monotonic()
        if remaining <= 0:
            return data, "time"
        ready, _, _ = _select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = _read(fd, 1 << 16)
        if not chunk:
            return data, "eof"
        data += chunk
        if _len(data) > limit:
            return data, "size"
    return data, None


# ---------------------------------------------------------------- results the agent's code cannot forge
#
# A test runs the agent's code in the very process that then reports the test's result, so any
# bytes that process can write, the agent's code can write first (it can find the result pipe in
# /proc/self/fd, or reopen its parent's end through /proc/<pid>/fd). So a result is taken only
# through this exchange, on a pipe from the reporting process (its *result pipe*) and one to it
# (its *nonce pipe*):
#
#   1. Before the fork, the parent draws a key; the reporter holds it in memory only.
#   2. Once the agent's code has returned, the reporter stops what of that code could still
#      run in it (`silence`), then writes `<pid> <sha256(key, pid)>` on the result pipe.
#   3. The parent checks that line, kills every process of the sandbox but the harness's own
#      and the reporter, checks that the reporter and itself each run one thread, and only then
#      draws a nonce and writes it on the nonce pipe.
#   4. The reporter writes `<nonce> <length>\n<JSON>` and exits. Nothing else may be on the pipe.
#
# Anything else on the result pipe (a frame the agent's code wrote, whether it then exited or
# went on) fails the test; it never passes it. Without reading the harness's memory the agent's
# code cannot write the line of step 2 (it lacks the key), and it never sees the nonce: that did
# not exist while it ran, and no process or thread of its own is left to read it when it is sent.
# From step 2 on the reporter calls only functions bound above before any agent code ran, and
# nothing that raises an audit event (an audit hook the agent's code added cannot be removed).
#
# Not closed, by nature: code that reads or rewrites this process's memory (walking frames or
# gc to the key, the checkers or these functions; ctypes; /proc/self/mem) can still report
# what it likes. See docs/security.md, "Python: the scorer out of the agent's reach".

READY_LEN = 10 + 1 + 64 + 1  # `<pid, 10 wide> <sha256 hex>\n`
NONCE_LEN = 32


def ready_line(key, pid):
    return b"%10d " % pid + _sha256(key + b"%10d" % pid).hexdigest().encode() + b"\n"


def encode(value):
    """JSON for the harness's own values (dicts, lists, strings, booleans), through functions
    bound before any agent code ran (json.dumps goes through json's replaceable encoder)."""
    kind = _type(value)
    if kind is _str:
        return _encode_string(value)
    if kind is _bool:
        return "true" if value else "false"
    if kind is _list:
        return "[" + ", ".join([encode(v) for v in value]) + "]"
    if kind is _dict:
        return "{" + ", ".join([_encode_string(k) + ": " + encode(v) for k, v in _dict.items(value)]) + "}"
    raise TypeError("not a value the harness reports")


def decode(data):
    """The one JSON value `data` holds, read by json's C scanner bound before any agent code ran; None if it holds anything else."""
    try:
        text = data.decode("utf-8")
        value, end = _scan_json(text, 0)
    except (StopIteration, ValueError):
        return None
    return value if end == _len(text) else None


def silence():
    """Stops what of the agent's code could still run in this process once that code has
    returned: trace, profile and monitoring callbacks, Python signal handlers (ignored from
    now on), interval timers, and the garbage collector with its callbacks (the finalizers
    a collection would run). Reference counts drop nothing of the agent's after this: the
    reporter holds its objects until it exits. Returns what `resume` needs to give the agent's
    code its hooks back (monitoring and timers aside), or None if a hook kept coming back."""
    saved = (_gettrace(), _getprofile(), _gc_isenabled(), [])
    for _ in _range(100):
        _setprofile(None)
        _settrace(None)
        if _gettrace() is None and _getprofile() is None:
            break
    else:
        return None
    if _monitoring is not None:  # Python 3.12 and later
        for tool in _range(6):
            try:
                _monitoring.set_events(tool, 0)
                for event in _range(20):
                    _monitoring.register_callback(tool, 1 << event, None)
            except ValueError:
                pass
    _gc_disable()
    del _gc_callbacks[:]
    for number in _SIGNALS:
        try:
            handler = _getsignal(number)
            if handler is not _SIG_DFL and handler is not _SIG_IGN and handler is not None:
                _signal(number, _SIG_IGN)
                saved[3].append((number, handler))
        except (OSError, ValueError):
            pass
    for timer in _ITIMERS:
        _setitimer(timer, 0)
    return saved


def resume(saved):
    """Gives the agent's code back the hooks `silence` took (in a test's process, before its code runs)."""
    trace, profile, collecting, handlers = saved
    for number, handler in handlers:
        _signal(number, handler)
    if collecting:
        _gc_enable()
    _setprofile(profile)
    _settrace(trace)


def report(key, result_pipe, nonce_pipe, result):
    """The reporter's steps 2 and 4 (above), once the agent's code has returned. Returns only if
    it could not report; the caller then exits."""
    if silence() is None:
        return
    payload = encode(result).encode("utf-8")
    write_all(result_pipe, ready_line(key, _getpid()))
    nonce = b""
    while _len(nonce) < NONCE_LEN:
        chunk = _read(nonce_pipe, NONCE_LEN - _len(nonce))
        if not chunk:
            return
        nonce += chunk
    write_all(result_pipe, nonce + b" %d\n" % _len(payload) + payload)


def thread_count(pid):
    """Threads of process `pid` (0 when it is gone)."""
    try:
        with _open(f"/proc/{pid}/status", "rb") as f:
            for line in f.read().split(b"\n"):
                if line.startswith(b"Threads:"):
                    return _int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def frame_state(data, nonce):
    """For the bytes after the ready line: "whole" (exactly one frame with the nonce), "part" (its beginning) or "bad"."""
    head = nonce + b" "
    if data[:_len(head)] != head[:_len(data)]:
        return "bad"
    newline = data.find(b"\n", _len(head))
    if newline < 0:
        return "part" if data[_len(head):].isdigit() or _len(data) <= _len(head) else "bad"
    digits = data[_len(head):newline]
    if not digits.isdigit():
        return "bad"
    size = _len(data) - newline - 1
    return "whole" if size == _int(digits) else "part" if size < _int(digits) else "bad"


def receive_report(result_pipe, nonce_pipe, key, reporter, deadline, limit, reaper, keep, killed=None):
    """The parent's steps 3 and 4 (above): the reported value, or None and why not ("time",
    "exit", "spoilt", "threads", "own threads"), and the count of other processes it killed
    (added to `killed`, a set, when given: see kill_strays).
    `reporter` is the reporting process's pid, or None for any that holds the key."""
    ready, why = read_until(result_pipe, b"", lambda d: _len(d) >= READY_LEN, deadline, limit)
    if why == "time":
        return None, "time", 0
    if not ready:
        return None, "exit", 0
    try:
        pid = _int(ready[:10])
    except ValueError:
        return None, "spoilt", 0
    if _len(ready) != READY_LEN or not _same_digest(ready, ready_line(key, pid)) or (reporter is not None and pid != reporter):
        return None, "spoilt", 0
    strays = kill_strays(reaper, keep | {pid}, killed)
    if thread_count(pid) != 1:
        return None, "threads", strays
    if thread_count(_getpid()) != 1:
        return None, "own threads", strays
    nonce = _urandom(NONCE_LEN // 2).hex().encode()
    try:
        write_all(nonce_pipe, nonce)
    except OSError:
        return None, "exit", strays
    # The reporter writes its frame at once; then it exits, and with it the pipe's last writer.
    grace = _monotonic() + 5
    data, why = read_until(result_pipe, b"", lambda d: frame_state(d, nonce) != "part", grace, limit)
    if why == "time" or frame_state(data, nonce) != "whole":
        return None, "spoilt", strays
    rest, why = read_until(result_pipe, b"", lambda d: _len(d) > 0, grace, limit)
    if rest or why != "eof":
        return None, "spoilt", strays
    value = decode(data[data.index(b"\n") + 1:])
    return (None, "spoilt", strays) if value is None else (value, None, strays)


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


def failure(case, message):
    if case[0] == "apps":
        return {"passed": False, "output": "", "error": message}
    return {"error": f"Error: {message}", "detail": message}


def run_case(namespace, prelude, case, limit, memory_bytes, reaper, keep, inherited=(), hooks=None):
    """Runs one test in a child forked from this process (its own time and address-space
    limit), which reports through `receive_report`; every process it leaves is killed.
    `inherited`: descriptors this process holds that the test must not (its own result pipes);
    `hooks`: what `silence` took from the agent's code, given back to it in the test's process.
    Returns the test's outcome."""
    started = _monotonic()
    key = _urandom(32)
    result_read, result_write = _pipe()
    nonce_read, nonce_write = _pipe()
    try:
        pid = _fork()
    except OSError as e:
        for fd in (result_read, result_write, nonce_read, nonce_write):
            _close(fd)
        kill_strays(reaper, keep)
        return failure(case, f"the test process could not start ({e.strerror})")
    if pid == 0:
        test_pid = _getpid()
        try:
            for fd in (result_read, nonce_write, *inherited):
                _close(fd)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
            if hooks is not None:
                resume(hooks)
            for code in prelude:
                intercode_execute(code, namespace)
            if case[0] == "apps":
                result = run_stdio_case(namespace, case[1], case[2], case[3])
            else:
                result = intercode_execute(bind_test(case[2], namespace) if case[2] is not None else case[1], namespace)
            if _getpid() == test_pid:  # not a process the test forked, returning through it
                report(key, result_write, nonce_read, result)
        finally:
            _exit(0)
    _close(result_write)
    _close(nonce_read)
    killed = _set()
    result, why, strays = receive_report(result_read, nonce_write, key, pid, started + limit, 8 * MAX_RESULT_CHARS + 4096, reaper, keep, killed)
    _close(result_read)
    _close(nonce_write)
    _kill(pid, _SIGKILL)
    _, status = _waitpid(pid, 0)
    strays = kill_strays(reaper, keep, killed)
    if why == "time":
        return failure(case, f"timed out after {limit:g} s and was killed")
    if why == "exit":
        return failure(case, f"the test process {describe_status(status)} before reporting a result")
    if why == "threads":
        return failure(case, "the test left a thread running (a result is taken only from a test process running one thread)")
    if why == "own threads":
        return failure(case, "a thread ran in the submission's interpreter while the test reported (a result is taken only when none does)")
    if why is not None:
        return failure(case, "the test process sent no valid result")
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
    """The submission's test cases and the code run before each, made in the scorer before any
    agent code runs in its forks: a test rewritten and compiled there (`prepare_test`), and the
    task's setup compiled there, cannot be chosen by an action that replaced ast or compile."""
    if request["kind"] == "apps":
        return [("apps", request["submitted"], c["input"], c["output"]) for c in request["cases"]], []
    prelude = [f"{request['entry']} = {request['submitted']}", harness_code(request["setup"])]
    return [("mbpp", t, prepare_test(t)) for t in request["tests"]], prelude


def run_submission(request, scorer_pid, key, pipes, cases, prelude):
    """In the submission process: rebuild the agent's namespace, run each of `cases` (after
    `prelude`, both made by the scorer: see submission_cases) in a child, and report the
    outcomes through `pipes` (its result and nonce pipes to the scorer)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.stdin = open(os.devnull)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)
    memory = request["memoryBytes"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    namespace = fresh_namespace()
    replay(request["history"], namespace, scorer_pid)
    # The tests run in a fork of the interpreter the actions rebuilt: a fork copies only the
    # calling thread, so no thread an action started runs beside the harness's code that
    # receives the tests' results, and the process that ran the actions is gone before any
    # test starts (the scorer, a subreaper, becomes this one's parent).
    if _fork() != 0:
        _exit(0)
    while _getppid() != scorer_pid:
        _sleep(0.001)
    me = _getpid()
    # The harness's code that follows runs none of the agent's hooks; each test gets them back.
    hooks = silence()
    if hooks is None:
        _exit(0)
    hooks[3][:] = [(n, h) for n, h in hooks[3] if n != signal.SIGINT]  # the tests ignore SIGINT, as before
    limit = request["testTimeoutMs"] / 1000
    results = [run_case(namespace, prelude, case, limit, memory, scorer_pid, {scorer_pid, me}, pipes, hooks) for case in cases]
    if _getpid() == me:
        report(key, pipes[0], pipes[1], results)


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
    cases, prelude = submission_cases(request)
    replay_seconds = sum(a["timeoutMs"] / 1000 + 1 for a in request["history"])
    deadline = time.monotonic() + replay_seconds + len(cases) * (request["testTimeoutMs"] / 1000 + 2) + 5
    key = _urandom(32)
    result_read, result_write = _pipe()
    nonce_read, nonce_write = _pipe()
    pid = _fork()
    if pid == 0:
        try:
            _close(result_read)
            _close(nonce_write)
            for fd in channel:  # the host's channel stays out of the agent's reach
                _close(fd)
            run_submission(request, scorer_pid, key, (result_write, nonce_read), cases, prelude)
        finally:
            _exit(0)
    _close(result_write)
    _close(nonce_read)
    # The reporter is the fork that ran the tests (its pid is in its ready line, keyed).
    results, why, _ = receive_report(result_read, nonce_write, key, None, deadline,
                                     len(cases) * (8 * MAX_RESULT_CHARS + 4096) + 4096, scorer_pid, {scorer_pid})
    _close(result_read)
    _close(nonce_write)
    kill_strays(scorer_pid, {scorer_pid})
    status = 0
    try:
        status = os.waitpid(pid, 0)[1]
    except ChildProcessError:
        pass
    reap_all()
    if why is None:
        results = valid_outcomes(results, cases)
        if results is None:
            why = "spoilt"
    if why is not None:
        reason = {
            "time": "did not finish in time",
            "exit": f"{describe_status(status)} before reporting a result",
            "threads": "ran another thread when it reported (a result is taken only from a process running one thread)",
        }.get(why, "sent no valid result")
        results = [failure(c, f"the submission's interpreter (its actions replayed) {reason}") for c in cases]
    return results


def score_gold(request, scorer_pid):
    limit = request["testTimeoutMs"] / 1000
    memory = request["memoryBytes"]
    namespace = fresh_namespace()
    prelude = [harness_code(request["setup"]), harness_code(request["gold"])]
    return [run_case(namespace, prelude, ("mbpp", t, prepare_test(t)), limit, memory, scorer_pid, {scorer_pid})
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
