# The Python verifier of an exported task. MBPP, InterCode's reward: the share of tests whose outcome
# ({output, error}, as InterCode's Python server reported it) for the submission equals the
# gold's. The submission is the agent's /app/solution.py, run as one action of its
# interpreter (a failure in it is ignored, as in the agent's session), then the test's set-up
# code, then the test. Each test runs in a process of its own, as user nobody (it cannot
# write /logs/verifier nor signal the verifier), with a time and an address-space limit.
# APPS: the share of stdin/stdout cases the program /app/solution.py passes (run as __main__).

import ast
import builtins
import hashlib
import io
import resource
import select
import signal
import sys
import time
import traceback

NOBODY = 65534
MAX_RESULT_CHARS = 64 * 1024

expected = read_json("expected.json")


def clip(text):
    if len(text) <= MAX_RESULT_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
    return f"{text[:MAX_RESULT_CHARS]}... [{len(text)} characters in all, sha256 {digest}]"


def intercode_execute(code, namespace):
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        exec(code, namespace)
        result = {"output": out.getvalue().strip(), "error": err.getvalue().strip()}
    except BaseException as e:  # noqa: BLE001 - every failure is a result
        result = {"error": f"Error: {e}"}
    finally:
        sys.stdout, sys.stderr = saved
    return {k: clip(v) for k, v in result.items()}


def replay(code, namespace):
    """The submission as one action of the agent's interpreter: its last expression is
    evaluated; a failure is ignored."""
    try:
        tree = ast.parse(code, "<solution>", "exec")
        last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        body = tree.body[:-1] if last else tree.body
        exec(compile(ast.Module(body=body, type_ignores=[]), "<solution>", "exec"), namespace)
        if last:
            eval(compile(ast.Expression(body=last.value), "<solution>", "eval"), namespace)
    except BaseException:  # noqa: BLE001
        pass


def in_child(work, limit, memory):
    """work() in a forked process of its own session, as nobody; its result, or a failure."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.setsid()
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            me = os.getpid()
            result = work()
            if os.getpid() == me:
                payload = json.dumps(result).encode("utf-8")
                view = memoryview(str(len(payload)).encode() + b"\n" + payload)
                while view:
                    view = view[os.write(write_end, view):]
        finally:
            os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + limit
    data, timed_out = b"", False
    while True:
        newline = data.find(b"\n")
        if newline > 0 and len(data) - newline - 1 >= int(data[:newline]):
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read_end], [], [], remaining)
        if ready:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            data += chunk
    os.close(read_end)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)
    if timed_out:
        return {"error": f"Error: timed out after {limit:g} s and was killed"}
    try:
        return json.loads(data[data.index(b"\n") + 1:].decode("utf-8"))
    except ValueError:
        return {"error": "Error: the test process ended before reporting a result"}


def fresh():
    return {"__name__": "__main__", "__builtins__": builtins}


def gold_case(test):
    namespace = fresh()
    intercode_execute(harness_code(expected["gold"]), namespace)
    intercode_execute(harness_code(expected["setup"]), namespace)
    return intercode_execute(checked_test(test, namespace) or test, namespace)


def pred_case(code, test):
    """The solution's code replayed (not trusted), then the test rewritten so that a value the
    solution's own code compares fails it (checked_values.py, sent ahead of this program)."""
    namespace = fresh()
    replay(code, namespace)
    intercode_execute(harness_code(expected["setup"]), namespace)
    return intercode_execute(checked_test(test, namespace) or test, namespace)


def normalise_lines(text):
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def stdio_case(code, stdin_text, expected_output):
    """APPS: the program run as __main__ with the case's input on stdin; passed when it
    raised nothing and printed the expected lines (trailing white space ignored)."""
    out = io.StringIO()
    saved = sys.stdin, sys.stdout
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin_text.encode("utf-8")), encoding="utf-8")
    sys.stdout = out
    try:
        exec(compile(code, "<solution>", "exec"), {"__name__": "__main__"})
        error = ""
    except BaseException as e:  # noqa: BLE001
        error = traceback.format_exception_only(type(e), e)[-1].strip()
    finally:
        sys.stdin, sys.stdout = saved
    return {"passed": error == "" and normalise_lines(out.getvalue()) == normalise_lines(expected_output)}


limit, memory = expected["testTimeoutSec"], expected["memoryBytes"]
code = read_answer(expected["answer"])
if expected["kind"] == "apps":
    cases = expected["cases"]
    passed = 0
    for case in cases:
        if code is not None and in_child(lambda: stdio_case(code, case["input"], case["output"]), limit, memory).get("passed") is True:
            passed += 1
    write_reward({"reward": passed / len(cases), "passed": passed, "total": len(cases)})
    sys.exit(0)

trust_standard_library()
by_test = {}
for test in expected["tests"]:
    gold = in_child(lambda: gold_case(test), limit, memory)
    pred = in_child(lambda: pred_case(code, test), limit, memory) if code is not None else {"error": "Error: no solution file"}
    by_test[test] = pred.get("output") == gold.get("output") and pred.get("error") == gold.get("error")
passed = sum(1 for ok in by_test.values() if ok)
write_reward({"reward": passed / len(by_test), "passed": passed, "total": len(by_test)})
