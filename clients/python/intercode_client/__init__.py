"""A typed client for `intercode serve`, written from OpenEnv's wire protocol.

It needs Python 3.9+ and the `websockets` package (10.4, Debian bookworm's
python3-websockets, works; so do later versions). One `IntercodeSession` is one WebSocket
connection, which the server holds as one session on one sandbox:

    async with IntercodeSession("http://127.0.0.1:8000", token=None) as env:
        first = await env.reset(task_id=0)          # {"observation": {...}, "reward": None, "done": False}
        print(first["observation"]["output"])       # the task's query
        result = await env.step("ls /testbed")      # the action is {"code": ...}
        result = await env.step("submit")           # ends the episode: reward, done=True
        state = await env.state()                   # {"episode_id", "step_count", "env", "task_id"}

A refused request raises `ServerError` with the server's code (INVALID_JSON, UNKNOWN_TYPE,
VALIDATION_ERROR, EXECUTION_ERROR, CAPACITY_REACHED, FACTORY_ERROR, SESSION_ERROR); the
session stays usable after it, unless the server closed the connection (CAPACITY_REACHED,
idle timeout).
"""

import json
from typing import Any, Dict, Optional, TypedDict, cast

try:  # websockets 13 and later: the new asyncio client (the legacy one is deprecated there)
    from websockets.asyncio.client import connect as _connect

    _HEADERS_ARGUMENT = "additional_headers"
except ImportError:  # websockets 10.4 (Debian bookworm) to 12
    from websockets.client import connect as _connect  # type: ignore[no-redef]

    _HEADERS_ARGUMENT = "extra_headers"

__all__ = ["IntercodeSession", "ServerError", "ws_url", "Task", "Observation", "StepResult", "State", "__version__"]
__version__ = "0.1.0"


class Task(TypedDict):
    """The task an observation names: its index in the server's dataset, and its query."""

    task_id: Optional[int]
    query: str


class Observation(TypedDict):
    """What the env showed: the action's output (after reset, the task's query), its exit code, the task, and the env's info."""

    output: str
    exit_code: Optional[int]
    task: Optional[Task]
    info: Dict[str, Any]


class StepResult(TypedDict):
    """A reset or step reply, in OpenEnv's shape: `reward` is None until the episode is scored; `done` when it ended."""

    observation: Observation
    reward: Optional[float]
    done: bool


class State(TypedDict):
    """The session's episode: its id, the steps taken, the env's name and the task."""

    episode_id: Optional[str]
    step_count: int
    env: str
    task_id: Optional[int]


class ServerError(Exception):
    """An `error` reply: `code` is one of OpenEnv's codes, `retryable` whether trying again may work, `data` the whole reply."""

    def __init__(self, data: Dict[str, Any]):
        super().__init__(f"{data.get('code')}: {data.get('message')}")
        self.code: Optional[str] = data.get("code")
        self.retryable: bool = bool(data.get("retryable"))
        self.data: Dict[str, Any] = data


def ws_url(base_url: str) -> str:
    """`http://host:port` -> `ws://host:port/ws`, as OpenEnv's clients turn it."""
    url = base_url.rstrip("/")
    if url.startswith("https://"):
        url = "wss://" + url[len("https://"):]
    elif url.startswith("http://"):
        url = "ws://" + url[len("http://"):]
    return url if url.endswith("/ws") else url + "/ws"


class IntercodeSession:
    """One session: reset / step / state over one WebSocket connection."""

    def __init__(self, base_url: str, token: Optional[str] = None, max_size: int = 16 * 1024 * 1024):
        self.url = ws_url(base_url)
        self.headers: Dict[str, str] = {"Authorization": f"Bearer {token}"} if token else {}
        self.max_size = max_size
        self.ws: Any = None

    async def __aenter__(self) -> "IntercodeSession":
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Connects; the server opens the session (and takes a sandbox) at the first reset."""
        self.ws = await _connect(self.url, max_size=self.max_size, **{_HEADERS_ARGUMENT: self.headers})

    async def _request(self, message: Dict[str, Any]) -> Dict[str, Any]:
        if self.ws is None:
            raise RuntimeError("the session is not open: use `async with IntercodeSession(...)` or call open()")
        await self.ws.send(json.dumps(message))
        reply = json.loads(await self.ws.recv())
        if reply.get("type") == "error":
            raise ServerError(reply.get("data", {}))
        return cast(Dict[str, Any], reply["data"])

    async def reset(self, task_id: Optional[int] = None, seed: Optional[int] = None, episode_id: Optional[str] = None) -> StepResult:
        """Starts an episode: of task `task_id` (an index into the server's tasks), else one the server picks (by `seed`)."""
        data: Dict[str, Any] = {}
        if task_id is not None:
            data["task_id"] = task_id
        if seed is not None:
            data["seed"] = seed
        if episode_id is not None:
            data["episode_id"] = episode_id
        return cast(StepResult, await self._request({"type": "reset", "data": data}))

    async def step(self, code: str) -> StepResult:
        """Runs one action (a command, a query, a line of Python; `submit` ends the episode and scores it)."""
        return cast(StepResult, await self._request({"type": "step", "data": {"code": code}}))

    async def state(self) -> State:
        return cast(State, await self._request({"type": "state"}))

    async def close(self) -> None:
        """Sends `close` (the server returns the sandbox at once) and closes the connection."""
        if self.ws is None:
            return
        try:
            await self.ws.send(json.dumps({"type": "close"}))
            await self.ws.close()
        except Exception:
            pass
        self.ws = None
