#!/usr/bin/env python3
"""Start a rysh run from CI, wait for it to end, and print its verdict (the REST API; stdlib only).

    RYSH_URL=https://rysh.example.com RYSH_TOKEN=rysh_… \\
        python3 scripts/rysh-ci.py task reading-list "distributed systems"

The token needs the `operate` scope, and its owner the operator (or admin) role. Exit status:
0 when the run ends `fulfilled` or `done`, 2 when it ends otherwise or pauses (a person has to
look), 3 when it has not ended within --timeout seconds (it keeps running), 1 when the API
refuses (the message says why).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

SUCCESS = ("fulfilled", "done")


def call(method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        os.environ["RYSH_URL"].rstrip("/") + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {os.environ['RYSH_TOKEN']}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as error:
        problem = json.load(error)  # every error is JSON: {"field": …, "message": …}
        sys.exit(f"rysh: {method} {path}: {error.code} {problem.get('field') or ''}: {problem['message']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["task", "code", "web"])
    parser.add_argument("name")
    parser.add_argument("args", nargs="*")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the run to end")
    parser.add_argument("--every", type=float, default=5, help="seconds between polls")
    options = parser.parse_args()

    started = call("POST", "/api/runs", {"kind": options.kind, "name": options.name, "args": options.args})
    run = started["run"]
    print(f"run #{run['id']} {run['state']}: {run['target']}", flush=True)
    deadline = time.monotonic() + options.timeout
    seen = run["state_label"]
    while not run["finished"] and not run["state"] == "paused":
        if time.monotonic() > deadline:
            print(f"run #{run['id']} has not ended after {options.timeout:.0f}s ({run['state_label']})")
            return 3
        time.sleep(options.every)
        run = call("GET", f"/api/runs/{run['id']}")
        if run["state_label"] != seen:
            seen = run["state_label"]
            print(f"run #{run['id']} {seen}, pass {run['pass']}/{run['passes_planned']}", flush=True)
    run = call("GET", f"/api/runs/{run['id']}")
    for p in run["passes"]:
        print(f"  pass {p['number']}: {p['verdict'] or '-'} {p['reason']}")
    if run["state"] == "paused":
        print(f"run #{run['id']} is {run['state_label']}: a person has to continue it")
        return 2
    print(f"run #{run['id']} finished: {run['cause']} ({run['tokens_counted']} tokens, ${run['cost'] or '0'})")
    return 0 if run["cause"] in SUCCESS else 2


if __name__ == "__main__":
    sys.exit(main())
