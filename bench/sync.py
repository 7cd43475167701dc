"""Benchmark the recipe sync and the catalogue page: `python -m bench.sync [N]` (N=1000).

Runs on a throwaway data folder (SQLite in WAL mode, as `make run`) and throwaway git
repositories, so it never touches .data. Measures, side by side:

- the initial sync of N recipe files (one commit),
- an incremental sync after a one-file commit (must read that one file only),
- the recipe list rendered with 10 and with N recipes (the query count must not grow).

Exit status 1 when one of those two rules breaks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(tempfile.mkdtemp(prefix="rysh-bench-"))
os.environ["RYSH_DATA_DIR"] = str(WORK / "data")
os.environ["DJANGO_SETTINGS_MODULE"] = "rysh_site.settings"
os.environ.setdefault("LOG_LEVEL", "WARNING")
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from catalogue.sync import recipes_sync  # noqa: E402

GIT = ["-c", "user.name=Bench", "-c", "user.email=bench@rysh.invalid"]
RECIPE = """---
description: Benchmark recipe {n} ({kind}), a one-line summary of what it does.
args: [topic]
schedule: "{minute} 3 * * *"
loop:
  do:
    max_iterations: {steps}
    max_duration: 10m
    budget:
      size: {size}p
      watch:
        takeover_when: 90
        takeover_prompt: Save what exists, label it PARTIAL and list what remains.
  while:
    max_iterations: 3
    budget: {total}p
    prompts:
      until: The saved result on {{{{topic}}}} is complete.
---
Do task number {n} on {{{{topic}}}} and save the result in {{{{output_dir}}}}.
"""


def make_repo(path: Path, count: int) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "-C", str(path), "init", "-q", "-b", "main"], check=True)
    for n in range(count):
        kind, folder = ("web", "webs") if n % 4 == 0 else ("task", "tasks")
        target = path / ".rysh/automations" / folder / f"recipe-{n:05d}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            RECIPE.format(n=n, kind=kind, minute=n % 60, steps=40 + n % 50, size=100 + n % 400, total=1000 + n % 900)
        )
    commit(path, f"{count} recipes")
    return path


def commit(path: Path, message: str) -> None:
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(path), *GIT, "commit", "-q", "-m", message], check=True)


def timed_sync(repo: Path):
    settings.RYSH_RECIPES_REPO = str(repo)
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        result = recipes_sync()
        seconds = time.perf_counter() - started
    return result, seconds, len(queries)


def timed_list(client: Client, rounds: int = 3):
    best, count, rows = None, 0, 0
    for _ in range(rounds):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get("/recipes/", HTTP_HOST="localhost")
            seconds = time.perf_counter() - started
        assert response.status_code == 200, response.status_code
        best = seconds if best is None else min(best, seconds)
        count, rows = len(queries), response.content.count(b'<tr id="recipe-')
    return best, count, rows


def main(count: int) -> int:
    call_command("migrate", verbosity=0)
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("bench", "b@rysh.invalid", "x"))

    small = make_repo(WORK / "small", 10)
    timed_sync(small)
    small_seconds, small_queries, small_rows = timed_list(client)

    big = make_repo(WORK / "big", count)
    initial, initial_seconds, initial_queries = timed_sync(big)
    target = big / ".rysh/automations/tasks/recipe-00001.md"
    target.write_text(target.read_text().replace("size: 101p", "size: 150p"))
    commit(big, "one edit")
    incremental, incremental_seconds, incremental_queries = timed_sync(big)
    big_seconds, big_queries, big_rows = timed_list(client)

    print(f"recipes sync benchmark ({count} files, SQLite WAL, git {git_version()})")
    print(
        f"  initial sync      {initial_seconds:8.3f}s  {initial_queries:5d} queries  "
        f"{initial.files_read:5d} files read  {initial.versions} versions  [{initial.line()}]"
    )
    print(
        f"  incremental sync  {incremental_seconds:8.3f}s  {incremental_queries:5d} queries  "
        f"{incremental.files_read:5d} files read  {incremental.versions} versions  "
        f"[{incremental.line()}]"
    )
    print(f"  initial / incremental: {initial_seconds / incremental_seconds:.1f}x")
    print(f"  recipe list, {small_rows:4d} recipes  {small_seconds:8.3f}s  {small_queries:5d} queries")
    print(f"  recipe list, {big_rows:4d} recipes  {big_seconds:8.3f}s  {big_queries:5d} queries")
    failures = []
    if big_rows != count:
        failures.append(f"the list shows {big_rows} rows, not {count}")
    if big_queries != small_queries:
        failures.append(f"the list's query count grew: {small_queries} -> {big_queries}")
    if incremental.files_read != 1:
        failures.append(f"the incremental sync read {incremental.files_read} files, not 1")
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print("ok: the list's query count is flat; the incremental sync read only the changed file")
    return 1 if failures else 0


def git_version() -> str:
    return subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]


if __name__ == "__main__":
    try:
        sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
    finally:
        connection.close()
        shutil.rmtree(WORK, ignore_errors=True)
