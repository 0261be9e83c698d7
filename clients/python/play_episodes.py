"""Plays scripted episodes against `intercode serve`, many sessions at once.

    /usr/bin/python3 clients/python/play_episodes.py --url http://127.0.0.1:8000 \
        --episodes episodes.json [--token T] [--together]

episodes.json: [{"task_id": 0, "actions": ["find /testbed -type f | wc -l", "submit"]}, ...]
Every episode runs in its own session (its own connection), all at once. With
--together, every session resets before any plays its actions (so all are open at the
same moment). Prints one JSON object: {"episodes": [{"task_id", "reward", "done",
"steps", "episode_id"}], "peak_sessions", "elapsed_sec"}.
"""

import argparse
import asyncio
import json
import sys
import time

from intercode_client import IntercodeSession


async def play(url, token, episode, gate, counter):
    async with IntercodeSession(url, token=token) as env:
        await env.reset(task_id=episode["task_id"])
        counter["open"] += 1
        counter["peak"] = max(counter["peak"], counter["open"])
        if gate is not None:
            gate["ready"] += 1
            if gate["ready"] == gate["total"]:
                gate["event"].set()
            await gate["event"].wait()
        last = None
        for action in episode["actions"]:
            last = await env.step(action)
            if last["done"]:
                break
        state = await env.state()
        counter["open"] -= 1
        return {
            "task_id": episode["task_id"],
            "reward": last["reward"] if last else None,
            "done": last["done"] if last else False,
            "steps": state["step_count"],
            "episode_id": state["episode_id"],
        }


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--episodes", required=True)
    parser.add_argument("--token")
    parser.add_argument("--together", action="store_true")
    args = parser.parse_args()
    with open(args.episodes) as f:
        episodes = json.load(f)
    gate = {"ready": 0, "total": len(episodes), "event": asyncio.Event()} if args.together else None
    counter = {"open": 0, "peak": 0}
    started = time.monotonic()
    results = await asyncio.gather(*(play(args.url, args.token, e, gate, counter) for e in episodes))
    json.dump({"episodes": results, "peak_sessions": counter["peak"], "elapsed_sec": time.monotonic() - started}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
