"""A small client for `intercode serve`, written from OpenEnv's wire protocol.

It needs only Python 3 and the `websockets` package (10.4, Debian bookworm's
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
from typing import Any, Dict, Optional

from websockets.client import connect

__all__ = ["IntercodeSession", "ServerError", "ws_url"]


class ServerError(Exception):
    """An `error` reply: `code` is one of OpenEnv's codes, `data` the whole reply."""

    def __init__(self, data: Dict[str, Any]):
        super().__init__(f"{data.get('code')}: {data.get('message')}")
        self.code = data.get("code")
        self.retryable = bool(data.get("retryable"))
        self.data = data


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
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.max_size = max_size
        self.ws = None

    async def __aenter__(self) -> "IntercodeSession":
        await self.open()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def open(self) -> None:
        self.ws = await connect(self.url, extra_headers=self.headers, max_size=self.max_size)

    async def _request(self, message: Dict[str, Any]) -> Dict[str, Any]:
        await self.ws.send(json.dumps(message))
        reply = json.loads(await self.ws.recv())
        if reply.get("type") == "error":
            raise ServerError(reply.get("data", {}))
        return reply["data"]

    async def reset(self, task_id: Optional[int] = None, seed: Optional[int] = None, episode_id: Optional[str] = None) -> Dict[str, Any]:
        data: Dict[str, Any] = {}
        if task_id is not None:
            data["task_id"] = task_id
        if seed is not None:
            data["seed"] = seed
        if episode_id is not None:
            data["episode_id"] = episode_id
        return await self._request({"type": "reset", "data": data})

    async def step(self, code: str) -> Dict[str, Any]:
        return await self._request({"type": "step", "data": {"code": code}})

    async def state(self) -> Dict[str, Any]:
        return await self._request({"type": "state"})

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
