# The SQL verifier of an exported task, InterCode's SQL reward: the agent's final query (the
# file /logs/agent/answer.sql) run once on the task's database, its rows rendered as the SQL
# env renders them (Python reprs of what mysql.connector returned: envs/sql/python-repr.ts and
# mariadb/convert.ts), then the multiset IoU with the gold's rows, times Kendall's tau-b of
# the shared rows' orders (envs/sql/reward.ts, kendall.ts). The gold's rows were read when the
# task was exported, on the original data in a new server, and are in expected.json: nothing
# the agent did to this container's data changes them. The query runs as the SQL env runs an
# agent's statement (envs/sql/mariadb/session.ts, group-order.ts: groups unsorted as MySQL 8,
# ties broken the same way every run, MySQL 8's GROUP BY check), on a fresh connection of an
# account made now with the env's reader role, in a read-only transaction, within the env's
# time, row and byte limits.

import math
import re
import secrets
import subprocess
import threading

import pymysql
import pymysql.cursors
from pymysql.constants import CLIENT

expected = read_json("expected.json")
SOCKET = "/run/intercode-sql/mysqld.sock"
TIMEOUT_S = expected["timeoutMs"] / 1000
MAX_ROWS = expected["maxRows"]
MAX_BYTES = expected["maxBytes"]

# --- envs/sql/mariadb/group-order.ts -------------------------------------------------------
# JavaScript's \s (the TypeScript env's regular expressions), not Python's.
WS = "\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
TOKEN = re.compile(
    f"[{WS}]+|--(?=[{WS}]|\\Z)[^\\n]*|#[^\\n]*|/\\*[\\s\\S]*?(?:\\*/|\\Z)|'(?:[^'\\\\]|\\\\[\\s\\S]|'')*'?"
    f"|\"(?:[^\"\\\\]|\\\\[\\s\\S]|\"\")*\"?|`(?:[^`]|``)*`?|[A-Za-z_][A-Za-z0-9_$]*|[()]|;|[^{WS}()'\"`;#A-Za-z_/-]+|[-/]"
)
WORD = re.compile("[A-Za-z_]")
SPACE = re.compile(f"[{WS}]")
AFTER_ORDER_BY = {"LIMIT", "OFFSET", "FETCH", "FOR", "INTO", "LOCK", "PROCEDURE"}
SET_OPERATORS = {"UNION", "INTERSECT", "EXCEPT", "MINUS"}
READ_STATEMENT = {"SELECT", "WITH", "("}


def tokens(sql):
    out, pos = [], 0
    while True:
        m = TOKEN.match(sql, pos)
        if not m or m.group(0) == "":
            return out
        text, pos = m.group(0), m.end()
        if SPACE.match(text) or text[0] == "#" or text.startswith("--") or text.startswith("/*"):
            continue
        out.append((text.upper() if WORD.match(text) else text, m.start(), m.end()))


def sorts_rows(sql):
    if not re.search("order[" + WS + "]+by|over", sql, re.IGNORECASE | re.ASCII):
        return False
    toks = tokens(sql)
    if not toks or toks[0][0] not in READ_STATEMENT:
        return False
    words = [t[0] for t in toks] + [""]
    return any(
        (w == "ORDER" and words[i + 1] == "BY") or (w == "OVER" and (words[i + 1] == "(" or re.match("[A-Z_]", words[i + 1])))
        for i, w in enumerate(words[:-1])
    )


def with_unsorted_groups(sql):
    if "/*!" in sql or not re.search("group[" + WS + "]+by", sql, re.IGNORECASE | re.ASCII):
        return None
    toks = tokens(sql)
    if not toks or toks[0][0] not in READ_STATEMENT:
        return None
    inserts = []
    new_block = lambda: {"grouped": False, "ordered": False, "unsafe": False, "insertAt": None, "lastEnd": 0}
    stack = [new_block()]

    def close(block):
        if block["grouped"] and not block["ordered"] and not block["unsafe"]:
            inserts.append(block["lastEnd"] if block["insertAt"] is None else block["insertAt"])

    for i, (text, _, end) in enumerate(toks):
        block = stack[-1]
        nxt = toks[i + 1][0] if i + 1 < len(toks) else None
        if text == "(":
            stack.append(new_block())
            continue
        if text in (")", ";"):
            if text == ";" or len(stack) > 1:
                close(stack.pop())
            if text == ";":
                break
            stack[-1]["lastEnd"] = end
            continue
        if text == "GROUP" and nxt == "BY":
            block["grouped"] = True
        elif text == "ORDER" and nxt == "BY":
            block["ordered"] = True
        elif text in SET_OPERATORS or (text == "WITH" and nxt == "ROLLUP"):
            block["unsafe"] = True
        elif block["grouped"] and block["insertAt"] is None and text in AFTER_ORDER_BY:
            block["insertAt"] = block["lastEnd"]
        block["lastEnd"] = end
    while stack:
        close(stack.pop())
    if not inserts:
        return None
    out = sql
    for at in sorted(set(inserts), reverse=True):
        out = out[:at] + " ORDER BY NULL" + out[at:]
    return out


# --- envs/sql/python-repr.ts and mariadb/convert.ts ------------------------------------------
DECIMAL, NEWDECIMAL, NULL_TYPE, TIMESTAMP, DATE, TIME, DATETIME, NEWDATE, BIT = 0, 246, 6, 7, 10, 11, 12, 14, 16
INTEGERS = {1, 2, 3, 8, 9, 13}
FLOATS = {4, 5}
BINARY_CHARSET = 63
# Cells the TypeScript driver hands over as numbers (the byte cap counts them as 8).
NUMBER_CELLS = {1, 2, 3, 9, 13, 4, 5}


def py_date(text):
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text)
    if not m or m.group(1) == "0000" or m.group(2) == "00" or m.group(3) == "00":
        return "None"
    return "datetime.date(%d, %d, %d)" % tuple(int(p) for p in m.groups())


def py_datetime(text):
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?", text)
    if not m or m.group(1) == "0000" or m.group(2) == "00" or m.group(3) == "00":
        return "None"
    parts = [str(int(p)) for p in m.groups()[:5]]
    seconds = int(m.group(6))
    micros = int(m.group(7).ljust(6, "0")) if m.group(7) else 0
    if seconds != 0 or micros != 0:
        parts.append(str(seconds))
    if micros != 0:
        parts.append(str(micros))
    return "datetime.datetime(%s)" % ", ".join(parts)


def py_timedelta(text):
    m = re.fullmatch(r"(-)?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?", text)
    if not m:
        return repr(text)
    micros = ((int(m.group(2)) * 3600 + int(m.group(3)) * 60 + int(m.group(4))) * 1000000 + int((m.group(5) or "").ljust(6, "0") or "0"))
    if m.group(1):
        micros = -micros
    days, rest = divmod(micros, 86400000000)
    seconds, us = divmod(rest, 1000000)
    parts = [f"{name}={value}" for name, value in (("days", days), ("seconds", seconds), ("microseconds", us)) if value != 0]
    return "datetime.timedelta(%s)" % (", ".join(parts) if parts else "0")


def render(value, type_code, charset):
    """A cell (PyMySQL without converters: text, or bytes for a binary string) as the SQL env's repr."""
    if value is None or type_code == NULL_TYPE:
        return "None"
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if type_code in (DECIMAL, NEWDECIMAL):
        return f"Decimal('{text}')"
    if type_code in INTEGERS:
        return text
    if type_code in FLOATS:
        return repr(float(text))
    if type_code in (DATE, NEWDATE):
        return py_date(text)
    if type_code in (DATETIME, TIMESTAMP):
        return py_datetime(text)
    if type_code == TIME:
        return py_timedelta(text)
    if type_code == BIT:
        return str(int.from_bytes(value, "big")) if isinstance(value, bytes) else text
    if charset == BINARY_CHARSET:
        return repr(value if isinstance(value, bytes) else value.encode("utf-8"))
    return repr(text)


def cell_bytes(value, type_code):
    if value is None or type_code in NUMBER_CELLS:
        return 8
    return len(value) if isinstance(value, bytes) else len(value.encode("utf-8"))


def row_string(cells):
    return f"({cells[0]},)" if len(cells) == 1 else "(" + ", ".join(cells) + ")"


# --- running the agent's query -----------------------------------------------------------------
NOT_IN_GROUP_BY = {1055, 1463}
STABLE_TIES = "tmp_memory_table_size = 0"
GROUP_BY_UNCHECKED = "sql_mode = REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY', '')"


class TimedOut(Exception):
    pass


def with_settings(settings, sql):
    return sql if not settings else f"SET STATEMENT {', '.join(settings)} FOR {sql}"


def connect(user, password=None):
    # No converters: every value as the server's text (bytes for a binary string). FOUND_ROWS
    # and no IGNORE_SPACE, as the SQL env's mysql2 connections.
    return pymysql.connect(unix_socket=SOCKET, user=user, password=password or "", charset="utf8mb4", conv={}, autocommit=True,
                           client_flag=CLIENT.FOUND_ROWS, read_timeout=TIMEOUT_S + 30, cursorclass=pymysql.cursors.SSCursor)


def run(admin, connection, sql):
    """(rows as strings, errno): rows None when the statement failed or returned no result set."""
    timed_out = []

    def stop():
        timed_out.append(True)
        with admin.cursor() as c:
            c.execute(f"KILL QUERY {connection.thread_id()}")

    timer = threading.Timer(TIMEOUT_S, stop)
    cursor = connection.cursor()
    timer.start()
    try:
        try:
            cursor.execute(sql)
        except pymysql.err.MySQLError as error:
            if timed_out:
                raise TimedOut()
            return None, error.args[0] if error.args and isinstance(error.args[0], int) else None
        if cursor.description is None:
            return None, None
        fields = cursor._result.fields
        kinds = [(f.type_code, f.charsetnr) for f in fields]
        rows, size = [], 0
        while True:
            try:
                row = cursor.fetchone()
            except pymysql.err.MySQLError:
                if timed_out:
                    raise TimedOut()
                raise
            if row is None:
                break
            if len(rows) >= MAX_ROWS:
                break
            size += sum(cell_bytes(v, k[0]) for v, k in zip(row, kinds))
            if size > MAX_BYTES:
                break
            rows.append(row_string([render(v, t, c) for v, (t, c) in zip(row, kinds)]))
        if timed_out:
            raise TimedOut()
        return rows, None
    finally:
        timer.cancel()


def agent_rows(query):
    """The rows of `query` as the SQL env's session gives them, or None (no rows to compare)."""
    started = subprocess.run(["/usr/local/lib/intercode/start-sql-server.sh"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=90)
    if started.returncode != 0:
        print("the SQL server did not start:", started.stdout.decode("utf-8", "replace"))
        return None
    # The harness's account (load-dumps.sh), as the SQL env's server makes its sessions' accounts.
    admin = pymysql.connect(unix_socket=SOCKET, user="intercode_admin", password="intercode_admin", autocommit=True)
    user, password = "ic_verifier_" + secrets.token_hex(8), secrets.token_hex(16)
    account = f"'{user}'@'localhost'"
    with admin.cursor() as c:
        c.execute(f"CREATE USER {account} IDENTIFIED BY '{password}'")
        c.execute(f"GRANT intercode_reader TO {account}")
        c.execute(f"SET DEFAULT ROLE intercode_reader FOR {account}")
    connection = connect(user, password)
    with connection.cursor() as c:
        # mysql2's connection collation, as the SQL env's sessions have it.
        c.execute("SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci")
        c.execute("USE `%s`" % expected["database"].replace("`", "``"))
        c.execute("SET SESSION TRANSACTION READ ONLY")
    attempts = []
    unsorted = with_unsorted_groups(query)
    if unsorted is not None:
        attempts.append(unsorted)
    attempts.append(query)
    try:
        for i, sql in enumerate(attempts):
            settings = [STABLE_TIES] if sorts_rows(sql) else []
            rows, errno = run(admin, connection, with_settings(settings, sql))
            if errno in NOT_IN_GROUP_BY:
                rows, errno = run(admin, connection, with_settings(settings + [GROUP_BY_UNCHECKED], sql))
            if errno is None or i == len(attempts) - 1:
                return rows
        return None
    except TimedOut:
        print(f"the query ran past its time limit of {TIMEOUT_S:g} s")
        return None


# --- envs/sql/reward.ts and kendall.ts -------------------------------------------------------
def dense_ranks(values):
    rank = {v: i + 1 for i, v in enumerate(sorted(set(values)))}
    return [rank[v] for v in values]


def tied_pairs_in_runs(length, same):
    total, run_length = 0, 1
    for i in range(1, length + 1):
        if i < length and same(i):
            run_length += 1
        else:
            total += run_length * (run_length - 1) // 2
            run_length = 1
    return total


def kendall_tau_b(x, y):
    n = len(x)
    if n == 0:
        return float("nan")
    rx, ry = dense_ranks(x), dense_ranks(y)
    order = sorted(range(n), key=lambda i: (rx[i], ry[i]))
    sorted_x = [rx[i] for i in order]
    sorted_y = sorted(ry)
    x_tied = tied_pairs_in_runs(n, lambda i: sorted_x[i] == sorted_x[i - 1])
    y_tied = tied_pairs_in_runs(n, lambda i: sorted_y[i] == sorted_y[i - 1])
    both_tied = tied_pairs_in_runs(n, lambda i: sorted_x[i] == sorted_x[i - 1] and ry[order[i]] == ry[order[i - 1]])
    total = n * (n - 1) // 2
    if x_tied == total or y_tied == total:
        return float("nan")
    max_rank = max(ry)
    tree = [0] * (max_rank + 1)
    seen = discordant = 0
    for i in order:
        rank = ry[i]
        not_above, k = 0, rank
        while k > 0:
            not_above += tree[k]
            k -= k & -k
        discordant += seen - not_above
        k = rank
        while k <= max_rank:
            tree[k] += 1
            k += k & -k
        seen += 1
    con_minus_dis = total - x_tied - y_tied + both_tied - 2 * discordant
    tau = con_minus_dis / math.sqrt(total - x_tied) / math.sqrt(total - y_tied)
    return min(1.0, max(-1.0, tau))


def counts(rows):
    out = {}
    for r in rows:
        out[r] = out.get(r, 0) + 1
    return out


def shared_in_order(rows, shared):
    left, out = dict(shared), []
    for r in rows:
        if left.get(r):
            left[r] -= 1
            out.append(r)
    return out


def sql_reward(agent, gold, ordered):
    """(reward, iou, tau or None), as envs/sql/reward.ts's sqlReward."""
    if agent is None or gold is None:
        return 0, 0, None
    if agent == gold:
        if not ordered:
            return 1, 1, None
        n = len(agent)
        tied = sum(c * (c - 1) // 2 for c in counts(agent).values())
        total = n * (n - 1) // 2
        if tied == total:
            return 1, 1, None
        tau = min(1.0, max(-1.0, (total - tied) / math.sqrt(total - tied) / math.sqrt(total - tied)))
        return round(tau, 2), 1, tau
    a, g = counts(agent), counts(gold)
    union = dict(a)
    for k, n in g.items():
        union[k] = max(n, union.get(k, 0))
    if not union:
        return 1, 1, None
    intersection = {k: min(n, g[k]) for k, n in a.items() if k in g}
    iou = sum(intersection.values()) / sum(union.values())
    if not intersection or not ordered:
        return iou, iou, None
    tau = kendall_tau_b(shared_in_order(agent, intersection), shared_in_order(gold, intersection))
    if math.isnan(tau):
        return iou, iou, None
    return round(tau * iou, 2), iou, tau


query = read_answer(expected["answer"])
rows = None
if query is not None:
    try:
        rows = agent_rows(query)
    except (pymysql.err.MySQLError, OSError, subprocess.SubprocessError) as error:
        # The server or the harness's account as the agent left them refuse: no rows to compare.
        print("the answer could not be run:", error)
reward, iou, tau = sql_reward(rows, expected["gold"], expected["ordered"])
write_reward({"reward": reward, "iou": iou, **({} if tau is None else {"kendall_tau": tau})})
