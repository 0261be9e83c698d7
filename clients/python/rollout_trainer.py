"""A trainer's loop over `intercode serve`'s POST /rollouts, with Debian's python3 only (stdlib).

    /usr/bin/python3 clients/python/rollout_trainer.py URL BASE_URL MODEL [STEPS] [TOKEN]

Each step asks for 4 samples of tasks 0-2 against the trainer's own OpenAI-compatible server
(BASE_URL, MODEL) at the policy version it is at, reads the groups as they finish, and prints
{"step","policy_version","groups","episodes","mean_reward","model_tokens","versions"}.
"""
import json, sys, urllib.request

def rollouts(url, request, token=None):
    """Yields the NDJSON stream's lines as the episodes finish; an error line raises."""
    headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
    with urllib.request.urlopen(urllib.request.Request(f"{url}/rollouts", json.dumps(request).encode(), headers)) as stream:
        for raw in stream:
            line = json.loads(raw)
            if line["type"] == "error":
                raise RuntimeError(f"{line['code']}: {line['message']}")
            yield line

def main(url, base_url, model, steps=2, token=None):
    for version in range(int(steps)):
        request = {"tasks": [0, 1, 2], "samples_per_task": 4, "base_url": base_url, "model": model, "tokens": "ids",
                   "turn_limit": 4, "policy_version": version, "stream": "group"}
        rewards, model_tokens, groups, versions = [], 0, 0, set()
        for line in rollouts(url, request, token):
            for record in line.get("records", []):  # one group of 4: here a trainer takes its policy-gradient step
                tokens = record["tokens"]["episode"]  # token_ids, loss_mask, logprobs as the server gave them
                model_tokens += sum(tokens["loss_mask"]) if tokens else 0
                rewards.append(record["reward"] * 1.0)
                versions.add((record["policy_version"]["start"], record["policy_version"]["end"]))
            groups += line["type"] == "group"
        print(json.dumps({"step": version, "policy_version": version, "groups": groups, "episodes": len(rewards),
                          "mean_reward": sum(rewards) / max(1, len(rewards)), "model_tokens": model_tokens,
                          "versions": sorted(versions)}), flush=True)

if __name__ == "__main__":
    main(*sys.argv[1:])
