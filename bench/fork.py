"""Benchmark forks (docs/forks.md): `python -m bench.fork [--quick]`.

Two measurements, side by side in one run (nothing is asserted on time):

(a) a fork against running again: a 6-pass coding run whose judge never says YES, on the real
    SDK path (agents.anthropic_model.AnthropicModel) against FakeAnthropic (a real HTTP Messages
    server on loopback). Then, side by side, a fork from its pass 4 (runs.forks.run_fork: a new
    copy made from the pass's restorable point, the results restored, passes 5-6 run) and the
    same recipe run again from the start (passes 1-6) to reach the same place. Both are
    measured from start to end by their ledgers and clocks: fork_saved_tokens = tokens of the
    run from the start - tokens of the fork (the passes 1-4 not paid again); seconds likewise.
(b) the cost of the per-pass points on a repository of 2,000 files: a working copy of it
    (workspaces.copies.create), then N passes, each changing a few files; per pass the tree
    snapshot a pass already took (copies.snapshot) and the point it now also keeps
    (copies.point: a commit of that tree on a hidden ref). point_ms = the point's own time, the
    median; point_bytes = what the copy's git directory grew by for the point (the commit
    object and its ref; the tree is the snapshot's), the mean.

Throwaway environment (bench.engine.set_up): a temp data folder with a fresh SQLite, a temp
git repository holding the recipe and its code; removed at the end. The last line is
machine-readable:
fork_saved_tokens=<n> point_ms=<x> point_bytes=<n>
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.engine import FAKE_KEY, Environment, set_up, write_recipe

PASSES = 6
FORK_FROM = 4
STEPS = 3  # tool steps of a pass before its final text
REPO_FILES = 2_000
RECIPE = f"""\
---
workdir: "."
loop:
  do:
    max_iterations: 20
    max_duration: 10m
    budget:
      size: 1b
  while:
    max_iterations: {PASSES}
    prompts:
      until: The log holds a line for every pass and the judge says it reads well.
      iterate_with: Add the next line to the log.
---
Add a line to log.txt for this pass, then say you are done.
"""


# ---------------------------------------------------------------- the fake model (pure)


def is_judge(body: dict) -> bool:
    system = body.get("system")
    text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system or [])
    return "judge" in text.lower()


def respond(body: dict) -> dict:
    """Stateless: a task leg runs STEPS bash steps (each a line in log.txt) then answers; the
    judge always says NO, so every run goes its whole number of passes."""
    if is_judge(body):
        return {"text": "NO\nthe log does not read well yet"}
    done = sum(1 for m in body["messages"] if m["role"] == "assistant")
    step = done % (STEPS + 1)
    if step < STEPS:
        command = f"echo 'a line, step {step + 1}' >> log.txt"
        return {"text": f"step {step + 1}", "tool_calls": [{"name": "bash", "input": {"command": command}}]}
    return {"text": "Done: the line is in the log."}


# ---------------------------------------------------------------- (a) a fork against running again


@dataclass
class Leg:
    label: str
    passes: list[int]  # the pass numbers it ran
    tokens: int
    seconds: float
    cause: str


@dataclass
class Saved:
    parent: Leg
    fork: Leg
    again: Leg

    @property
    def tokens(self) -> int:
        return self.again.tokens - self.fork.tokens

    @property
    def seconds(self) -> float:
        return self.again.seconds - self.fork.seconds


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@rysh.invalid", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def coding_recipe(env: Environment) -> Path:
    path = write_recipe(env, "forked", RECIPE)
    repo = env.work / "repo"
    (repo / "log.txt").write_text("the log\n")
    if not (repo / ".git").exists():
        _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "a coding recipe for the fork bench")
    return path


def _as_claude(run):
    """The run labelled and priced as a Claude run (it is one: the SDK against the fake server)."""
    from django.conf import settings

    from runs.models import Run

    Run.objects.filter(pk=run.pk).update(
        provider="anthropic", executor_model=settings.RYSH_EXECUTOR_MODEL, judge_model=settings.RYSH_JUDGE_MODEL
    )


def execute(run, base_url: str, label: str) -> Leg:
    from agents.anthropic_model import AnthropicModel
    from runs import worker
    from runs.wiring import arm_run

    _as_claude(run)
    model = AnthropicModel(api_key=FAKE_KEY, base_url=base_url)
    began = time.perf_counter()
    worker.execute(run.pk, lambda r: arm_run(r, model=model))
    seconds = time.perf_counter() - began
    if model._client is not None:
        model._client.close()
    run.refresh_from_db()
    passes = list(run.passes.order_by("number").values_list("number", flat=True))
    return Leg(label=label, passes=passes, tokens=run.tokens_counted, seconds=seconds, cause=run.cause)


def bench_fork(env: Environment) -> Saved:
    from runs import forks, services
    from tests.fakes.anthropic_server import FakeAnthropic

    path = coding_recipe(env)
    with FakeAnthropic() as fake:
        fake.responder = respond
        start = lambda: services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")  # noqa: E731
        parent_run = start()
        parent = execute(parent_run, fake.base_url, "parent")
        parent_run.refresh_from_db()
        fork_run = forks.run_fork(run=parent_run, pass_number=FORK_FROM, user=None, provider="scripted")
        fork = execute(fork_run, fake.base_url, f"fork from pass {FORK_FROM}")
        again = execute(start(), fake.base_url, "from the start again")
    return Saved(parent=parent, fork=fork, again=again)


# ---------------------------------------------------------------- (b) the per-pass points


@dataclass
class Points:
    files: int
    passes: int
    snapshot_ms: float  # median: the tree a pass already took
    point_ms: float  # median: the point it now keeps too
    point_bytes: float  # mean growth of the git directory for the point alone
    snapshot_bytes: float  # mean growth for the snapshot (the tree and the changed files)


def du(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def module(root: Path, i: int) -> Path:
    return root / f"pkg{i % 40:02d}" / f"module_{i:04d}.py"


def big_repository(root: Path, files: int) -> tuple[Path, str]:
    repo = root / "big"
    for i in range(files):
        path = module(repo, i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""module {i}"""\n\n\ndef value():\n    return {i}\n' + "# padding\n" * 20)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{files} files")
    return repo, _git(repo, "rev-parse", "HEAD").strip()


def bench_points(env: Environment, passes: int) -> Points:
    from workspaces import copies
    from workspaces.services import POINT_EMAIL, POINT_NAME, point_ref

    repo, base = big_repository(env.work, REPO_FILES)
    copy = copies.create(env.work / "copy", source=repo / ".git", commit=base, branch="rysh/bench")
    timings: dict[str, list[float]] = {"snapshot": [], "point": []}
    grown: dict[str, list[int]] = {"snapshot": [], "point": []}
    parent = base
    for n in range(1, passes + 1):
        for i in range(5):  # a pass's work: a few files changed, one added
            target = module(copy.tree, (n * 7 + i) % REPO_FILES)
            target.write_text(target.read_text() + f"# pass {n}\n")
        (copy.tree / f"notes-{n}.md").write_text(f"pass {n}\n")
        size = du(copy.git_dir)
        began = time.perf_counter()
        tree = copies.snapshot(copy, base=base)
        timings["snapshot"].append((time.perf_counter() - began) * 1000)
        grown["snapshot"].append(du(copy.git_dir) - size)
        size = du(copy.git_dir)
        began = time.perf_counter()
        parent = copies.point(
            copy,
            tree=tree,
            parent=parent,
            ref=point_ref(0, n),
            message=f"bench, end of pass {n}\n",
            name=POINT_NAME,
            email=POINT_EMAIL,
        )
        timings["point"].append((time.perf_counter() - began) * 1000)
        grown["point"].append(du(copy.git_dir) - size)
    return Points(
        files=REPO_FILES,
        passes=passes,
        snapshot_ms=statistics.median(timings["snapshot"]),
        point_ms=statistics.median(timings["point"]),
        point_bytes=statistics.mean(grown["point"]),
        snapshot_bytes=statistics.mean(grown["snapshot"]),
    )


# ---------------------------------------------------------------- the report (pure)


def report(a: Saved, b: Points) -> list[str]:
    def leg(x: Leg) -> str:
        ran = f"passes {x.passes[0]}-{x.passes[-1]}" if x.passes else "no pass"
        return f"    {x.label:<22} {ran:<12} {x.tokens:>9,} tokens {x.seconds:7.2f} s  ({x.cause})"

    return [
        f"(a) a fork from pass {FORK_FROM} of a {PASSES}-pass coding run, against running it again from the start "
        "(the SDK against FakeAnthropic):",
        leg(a.parent),
        leg(a.fork),
        leg(a.again),
        f"    the fork saved {a.tokens:,} tokens and {a.seconds:.2f} s "
        f"({a.tokens / a.again.tokens:.0%} of the tokens of running again)"
        if a.again.tokens
        else "    nothing ran",
        f"(b) the per-pass points on a repository of {b.files:,} files, {b.passes} passes:",
        f"    the pass's tree snapshot (already taken) {b.snapshot_ms:7.1f} ms  {b.snapshot_bytes:>9,.0f} bytes",
        f"    its restorable point (now kept too)     {b.point_ms:7.1f} ms  {b.point_bytes:>9,.0f} bytes",
        f"fork_saved_tokens={a.tokens} point_ms={b.point_ms:.1f} point_bytes={b.point_bytes:.0f}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer passes of (b)")
    options = parser.parse_args(argv)
    env = set_up()
    try:
        from agents.sandbox import sandbox_problem
        from runs.wiring import sandbox_config

        if problem := sandbox_problem(sandbox_config()):
            print(f"the sandbox cannot start here: {problem}")
            return 1
        os.environ.setdefault("ANTHROPIC_API_KEY", FAKE_KEY)
        lines = report(bench_fork(env), bench_points(env, 5 if options.quick else 20))
    finally:
        env.cleanup()
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
