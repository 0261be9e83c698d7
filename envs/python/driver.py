"""In-sandbox driver of the Python environment: the agent's interpreter.

The host starts `python3 -I -B -u -c <boot> <name> NONCE` and sends this program over stdin
(see envs/python/frame-channel.ts), then talks to it over its attached stdin/stdout only
(no network, no ports). Scoring never happens here: the agent's code runs in this
sandbox, so its tests run in a new sandbox (envs/python/scorer.py).

Host -> driver: frames `<byte length>\\n<JSON>` on stdin, one request each:
  {"op": "exec",  "id": n, "code": str, "timeoutMs": int, "keepBytes": int, "killBytes": int, "graceMs": int}
  {"op": "load",  "id": n, "codes": [str], "timeoutMs": int}   (a fresh namespace that ran `codes`)
  {"op": "observe", "id": n, "timeoutMs": int, "headChars": int, "maxGlobals": int}
                                                 (the namespace's globals, seen by a fork of the worker)
Driver -> host: frames `\\x1eIC<nonce> <byte length>\\n<JSON>` on stdout. Anything else on
the stream (a crash report of the driver itself) is not a frame and is shown as noise.

Process layout: the driver (a child subreaper) forks a *worker* holding the interpreter
namespace. The worker's stdout and stderr are one pipe the driver reads, so output is
captured at the file-descriptor level (subprocesses included), capped, and a flood is
stopped. An action that overruns its time limit gets SIGINT (KeyboardInterrupt, the
namespace survives); one that ignores it, or a worker that dies (os._exit, a C crash, an
out-of-memory kill), is replaced by a fresh worker and the reply says why. After every
request, every process the action left behind is killed.
"""

import ast
import builtins
import ctypes
import io
import json
import linecache
import os
import resource
import select
import signal
import socket
import sys
import time
import traceback

PR_SET_CHILD_SUBREAPER = 36
DEFAULT_MEMORY_BYTES = 768 * 1024 * 1024


# ---------------------------------------------------------------- framing


def send_frame(fd, obj, prefix=b""):
    payload = json.dumps(obj).encode("utf-8")
    write_all(fd, prefix + str(len(payload)).encode() + b"\n" + payload)


def read_frame(stream):
    """Reads one `<length>\\n<JSON>` frame from a binary file object; None at EOF."""
    header = stream.readline()
    if not header:
        return None
    length = int(header.strip())
    payload = b""
    while len(payload) < length:
        chunk = stream.read(length - len(payload))
        if not chunk:
            return None
        payload += chunk
    return json.loads(payload.decode("utf-8"))


# ---------------------------------------------------------------- code execution
# (write_all, process_table, descendants, kill_strays, describe_status, reap_all: sandbox_common.py, sent ahead of this program)

def fresh_namespace():
    return {"__name__": "__main__", "__builtins__": builtins}


class Worker:
    """The interpreter: holds the episode's namespace and runs actions in it."""

    def __init__(self, ctrl_fd):
        self.ctrl_fd = ctrl_fd
        self.pid = os.getpid()
        self.namespace = fresh_namespace()
        self.count = 0

    def serve(self):
        # SIGINT (the driver's time limit) interrupts actions only, never the protocol.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        requests = os.fdopen(os.dup(self.ctrl_fd), "rb")
        while True:
            request = read_frame(requests)
            if request is None:
                os._exit(0)
            op = request["op"]
            reply = self.load(request) if op == "load" else self.observe(request) if op == "observe" else self.run_action(request["code"])
            if os.getpid() != self.pid:  # a process the action forked: never answer for the worker
                os._exit(0)
            send_frame(self.ctrl_fd, {"id": request["id"], **reply})

    # ------------------------------------------------------------ actions

    def run_action(self, code):
        self.count += 1
        filename = f"<action {self.count}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            try:
                tree = ast.parse(code, filename, "exec")
            except (SyntaxError, ValueError) as e:
                sys.stderr.write("".join(traceback.format_exception_only(type(e), e)))
                return {"executed": False}
            last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            body = tree.body[:-1] if last else tree.body
            signal.signal(signal.SIGINT, signal.default_int_handler)
            exec(compile(ast.Module(body=body, type_ignores=[]), filename, "exec"), self.namespace)
            if last:
                value = eval(compile(ast.Expression(body=last.value), filename, "eval"), self.namespace)
                if value is not None:
                    sys.stdout.write(f"{value!r}\n")
            return {"executed": True}
        except BaseException as e:  # noqa: BLE001 - KeyboardInterrupt (time limit) and SystemExit too
            tb = e.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                tb = tb.tb_next
            sys.stderr.write("".join(traceback.format_exception(type(e), e, tb)))
            return {"executed": False}
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            sys.stdout.flush()
            sys.stderr.flush()

    # ------------------------------------------------------------ gold state

    def load(self, request):
        """A fresh namespace that ran each of `codes` (InterCode's scoring left the gold's
        namespace behind); failures, and code past its time limit, are ignored."""
        self.namespace = fresh_namespace()
        for code in request["codes"]:
            try:
                with time_limit(request["timeoutMs"] / 1000):
                    exec(code, self.namespace)
            except BaseException:  # noqa: BLE001 - as InterCode's server: an error is output
                pass
        return {"executed": True}


    # ------------------------------------------------------------ observer

    def observe(self, request):
        """What the namespace's globals are, read by a fork of this worker (an observer): a
        `__repr__` that changes state changes the observer's copy only; one that raises, or
        takes longer than `timeoutMs` in all, makes the reply a refusal (the observer is killed)."""
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(read_end)
                try:
                    result = describe_namespace(self.namespace, request["headChars"], request["maxGlobals"])
                except BaseException as e:  # noqa: BLE001 - a hostile repr raises anything
                    result = {"refused": "repr-raised", "error": type(e).__name__}
                write_all(write_end, json.dumps(result).encode("utf-8"))
            finally:
                os._exit(0)
        os.close(write_end)
        data, deadline = b"", time.monotonic() + request["timeoutMs"] / 1000
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([read_end], [], [], remaining)[0]:
                    return {"observed": {"refused": "repr-timed-out"}}
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(read_end)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
        try:
            return {"observed": json.loads(data.decode("utf-8"))}
        except ValueError:
            return {"observed": {"refused": "repr-raised", "error": "the observer stopped before answering"}}


def describe_namespace(namespace, head_chars, max_globals):
    """Each global but `__builtins__`, by sorted name: its type's name, the length and sha256
    of its canonical repr (see canonical_repr) and the repr's first `head_chars` characters.
    A repr that raises: a refusal naming the global."""
    import hashlib
    names = list(namespace)
    if not all(type(name) is str for name in names):
        return {"refused": "unreadable", "error": "a global's name is not a string"}
    names = sorted(name for name in names if name != "__builtins__")
    if len(names) > max_globals:
        return {"refused": "too-many-globals", "globals": len(names)}
    globals_seen = []
    for name in names:
        value = namespace[name]
        kind = type(value)
        try:
            text = canonical_repr(value, 0)
        except BaseException as e:  # noqa: BLE001 - a hostile repr raises anything
            return {"refused": "repr-raised", "name": name, "error": type(e).__name__}
        if type(text) is not str:
            return {"refused": "repr-raised", "name": name, "error": "repr gave no str"}
        globals_seen.append({
            "name": name,
            "type": f"{kind.__module__}.{kind.__qualname__}",
            "reprChars": len(text),
            "reprSha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            "head": text[:head_chars],
        })
    return {"globals": globals_seen}


ADDRESS = None


def canonical_repr(value, depth, active=None):
    """repr(value) without what differs between two interpreters that ran the same code:
    object addresses (` at 0x…`), the order of a set's elements (it follows string hashes,
    seeded per interpreter), a module's file; a function's defaults are added (its repr
    shows none)."""
    global ADDRESS
    import re
    import types
    ADDRESS = ADDRESS or re.compile(r" at 0x[0-9a-fA-F]+")
    kind = type(value)
    if kind is types.ModuleType:
        return f"<module {value.__name__!r}>"
    if depth < 20 and kind in (set, frozenset, list, tuple, dict):
        active = active or set()
        if id(value) in active:
            return "[...]"
        active.add(id(value))
        try:
            if kind is dict:
                return "{" + ", ".join(f"{canonical_repr(k, depth + 1, active)}: {canonical_repr(v, depth + 1, active)}" for k, v in value.items()) + "}"
            inner = [canonical_repr(v, depth + 1, active) for v in value]
            if kind in (set, frozenset):
                return f"{kind.__name__}({{{', '.join(sorted(inner))}}})"
            if kind is list:
                return f"[{', '.join(inner)}]"
            return f"({inner[0]},)" if len(inner) == 1 else f"({', '.join(inner)})"
        finally:
            active.discard(id(value))
    text = ADDRESS.sub(" at 0x?", repr(value))
    if kind is types.FunctionType:
        text += f" defaults={canonical_repr(value.__defaults__, depth + 1)} kwdefaults={canonical_repr(value.__kwdefaults__, depth + 1)}"
    return text


class time_limit:
    """SIGALRM-based guard for trusted code run inside the worker (the gold solution)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        def expire(signum, frame):
            raise TimeoutError(f"took longer than {self.seconds:g} s")
        self.previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        return exc[0] is TimeoutError


# ---------------------------------------------------------------- driver

class Driver:
    def __init__(self, nonce, memory_bytes):
        self.prefix = b"\x1eIC" + nonce.encode() + b" "
        self.memory_bytes = memory_bytes
        self.pid = os.getpid()
        self.proto_in = os.fdopen(os.dup(0), "rb")
        self.proto_out = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        self.worker_pid = 0
        self.start_worker()

    def reply(self, obj):
        send_frame(self.proto_out, obj, self.prefix)

    def start_worker(self):
        parent_end, child_end = _socketpair()
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(parent_end)
                os.close(out_r)
                self.proto_in.close()
                os.close(self.proto_out)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                os.close(out_w)
                os.setsid()
                sys.stdin = open(os.devnull)
                sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                              errors="backslashreplace", write_through=True)
                sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                              errors="backslashreplace", write_through=True)
                resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
                Worker(child_end).serve()
            finally:
                os._exit(0)
        os.close(child_end)
        os.close(out_w)
        self.worker_pid, self.ctrl, self.out = pid, parent_end, out_r
        self.ctrl_reader = os.fdopen(os.dup(parent_end), "rb")
        os.set_blocking(out_r, False)

    def stop_worker(self):
        try:
            os.kill(self.worker_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        status = self.reap(self.worker_pid)
        for fd in (self.ctrl, self.out):
            os.close(fd)
        self.ctrl_reader.close()
        return status

    def reap(self, pid):
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return 0

    def serve(self):
        self.reply({"ready": True, "python": sys.version.split()[0]})
        while True:
            request = read_frame(self.proto_in)
            if request is None:
                return
            try:
                self.reply(self.handle(request))
            except Exception as e:  # noqa: BLE001 - a driver bug must reach the host, not hang it
                self.reply({"id": request.get("id"), "driverError": "".join(traceback.format_exception(type(e), e, e.__traceback__))})
            reap_all()

    def handle(self, request):
        if request["op"] == "exec":
            return self.exec_action(request)
        if request["op"] == "observe":
            return self.observe(request)
        # load: the code enforces its own limit in the worker; this is a backstop only.
        backstop = (request["timeoutMs"] / 1000 + 2) * (len(request["codes"]) + 1)
        reply, output, exited = self.await_worker(request, backstop, keep=0, kill=1 << 30)
        if reply is None:
            status = self.stop_worker()
            self.start_worker()
            why = describe_status(status) if exited else f"did not finish in {backstop:g} s"
            return {"id": request["id"], "driverError": f"the interpreter {why} while loading code"}
        return reply

    def observe(self, request):
        """The worker's observation of its namespace (Worker.observe). A worker that does not
        answer in time (its code patched by an action) is replaced, and the reply says so."""
        reply, output, exited = self.await_worker(request, request["timeoutMs"] / 1000 + 2, keep=0, kill=1 << 30)
        if reply is None or not isinstance(reply.get("observed"), dict):
            status = self.stop_worker()
            self.start_worker()
            why = f"stopped ({describe_status(status)})" if exited else "did not answer"
            return {"id": request["id"], "observed": {"refused": "unanswered"}, "restarted": f"{why} when observed and was replaced"}
        return {"id": request["id"], "observed": reply["observed"]}

    def exec_action(self, request):
        keep, kill = request["keepBytes"], request["killBytes"]
        reply, output, exited = self.await_worker(request, request["timeoutMs"] / 1000, keep, kill)
        notes = {"timedOut": False, "outputLimit": False, "restarted": None}
        if reply is None and not exited:
            notes["timedOut"] = output["total"] <= kill
            notes["outputLimit"] = output["total"] > kill
            try:
                os.kill(self.worker_pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            reply, output, exited = self.await_worker(None, request["graceMs"] / 1000, keep, float("inf"), output)
            if reply is None and not exited:
                status = self.stop_worker()
                notes["restarted"] = "it did not stop when interrupted and was killed"
                self.start_worker()
        if reply is None and exited:
            status = self.stop_worker()
            notes["restarted"] = f"it {describe_status(status)}"
            self.start_worker()
        strays = kill_strays(self.pid, {self.pid, self.worker_pid})
        return {
            "id": request["id"],
            "executed": bool(reply and reply.get("executed")) and not notes["timedOut"],
            "output": output["data"].decode("utf-8", "replace"),
            "outputBytes": output["total"],
            "strays": strays,
            **notes,
        }

    def await_worker(self, request, seconds, keep, kill, output=None):
        """Sends `request` (if any) and waits up to `seconds` for the reply, collecting output.
        Returns (reply or None, output, whether the worker exited)."""
        output = output or {"data": b"", "total": 0}
        if request is not None:
            send_frame(self.ctrl, request)
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, output, False
            ready, _, _ = select.select([self.ctrl, self.out], [], [], remaining)
            if self.out in ready:
                self.collect(output, keep)
                if output["total"] > kill:
                    return None, output, False
            if self.ctrl in ready:
                reply = read_frame(self.ctrl_reader)
                self.collect(output, keep)
                return reply, output, reply is None

    def collect(self, output, keep):
        while True:
            try:
                chunk = os.read(self.out, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                return
            output["total"] += len(chunk)
            room = keep - len(output["data"])
            if room > 0:
                output["data"] += chunk[:room]


def _socketpair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return a.detach(), b.detach()


if __name__ == "__main__":
    memory = int(os.environ.get("IC_MEMORY_BYTES", DEFAULT_MEMORY_BYTES))
    Driver(sys.argv[2], memory).serve()
