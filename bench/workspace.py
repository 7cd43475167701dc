"""Benchmark coding runs' sandbox: `python -m bench.workspace [--quick]`.

Three measurements, side by side in one run (nothing is asserted on time):

(a) start-up per command: the same trivial command (`true`) through the bubblewrap sandbox
    (agents.sandbox, as a coding run starts it: the data folder and home hidden, the copy's
    git directory mounted read-only) and as a bare `subprocess.run(["bash", "-c", "true"])`;
    the median of N interleaved runs each. sandbox_ms - bare_ms is what the sandbox adds.
(b) a 50 MB output flood inside a real run: a coding recipe whose model (FakeModel,
    adversarial: it spends the most any call could) runs `head -c 50000000 /dev/zero | tr`
    as its first command, then another command, then answers. The pass must go on and end
    `done`; flood_overshoot_tokens sums the tokens counted past any leg's allotment, the
    job's worst case or its outer total (bench.engine.run_overshoot; expected 0).
(c) a cancel during `sleep 300`: a run's command sleeps; once it runs, the run is cancelled
    (services.run_cancel, as the button does). cancel_s = seconds from the request to the
    worker letting go of the run paused(cancelled); left_processes = processes of that
    command still alive afterwards (expected 0).

Throwaway environment (bench.engine.set_up): a temp data folder with a fresh SQLite, a temp
git repository holding the recipe and its code; removed at the end. The last line is
machine-readable:
sandbox_ms=<x> bare_ms=<x> flood_overshoot_tokens=<n> cancel_s=<x> left_processes=<n>
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from bench.engine import Environment, run_overshoot, set_up, write_recipe

FLOOD_BYTES = 50_000_000
RECIPE = """\
---
workdir: "."
loop:
  do:
    max_iterations: 20
    max_duration: 10m
    budget:
      size: 30p
---
Run the commands you are asked to, then answer.
"""


def _git(env: Environment, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(env.work / "repo"), "-c", "user.name=bench", "-c", "user.email=bench@rysh.invalid", *args],
        check=True,
        capture_output=True,
    )


def coding_recipe(env: Environment, name: str):
    path = write_recipe(env, name, RECIPE)
    (env.work / "repo/README.md").write_text("a repository for the benchmark\n")
    if not (env.work / "repo/.git").exists():
        _git(env, "init", "-q", "-b", "main")
    _git(env, "add", "-A")
    _git(env, "commit", "-q", "--allow-empty", "-m", name)
    return path


# ---------------------------------------------------------------- (a) start-up per command


@dataclass
class Startup:
    sandbox_ms: float
    bare_ms: float
    unsandboxed_ms: float


def bench_startup(env: Environment, repeats: int) -> Startup:
    from agents.sandbox import Sandbox
    from runs.wiring import sandbox_config

    copy = env.work / "copy"
    (copy / ".git").mkdir(parents=True)
    (env.work / "gitdir").mkdir()
    config = sandbox_config()
    sandboxed = Sandbox(copy, config=config, readonly=[(env.work / "gitdir", copy / ".git")])
    plain = Sandbox(copy, config=_off(config))
    timings: dict[str, list[float]] = {"sandbox": [], "bare": [], "unsandboxed": []}
    for _ in range(repeats):
        for name, run in (
            ("sandbox", lambda: sandboxed.run("true", cwd=copy, timeout=30)),
            ("bare", lambda: subprocess.run(["bash", "-c", "true"], cwd=copy, check=True)),
            ("unsandboxed", lambda: plain.run("true", cwd=copy, timeout=30)),
        ):
            began = time.perf_counter()
            run()
            timings[name].append((time.perf_counter() - began) * 1000)
    return Startup(*(statistics.median(timings[k]) for k in ("sandbox", "bare", "unsandboxed")))


def _off(config):
    from dataclasses import replace  # the same limits, no bubblewrap

    return replace(config, enabled=False)


# ---------------------------------------------------------------- (b) the flood


@dataclass
class Flood:
    overshoot: int
    cause: str
    steps: int
    output_bytes: int
    seconds: float


def bench_flood(env: Environment) -> Flood:
    from runs import services
    from tests.conftest import drive
    from tests.fake_model import FakeModel, tool

    path = coding_recipe(env, "flood")
    model = FakeModel(
        adversarial=True,
        repeat_last=False,
        task=[
            {"text": "flood", "tools": [tool("bash", command=f"head -c {FLOOD_BYTES} /dev/zero | tr '\\0' x")]},
            {"text": "after", "tools": [tool("bash", command="echo the pass goes on")]},
            {"text": "Done."},
        ],
    )
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    began = time.monotonic()
    run = drive(run, model)
    seconds = time.monotonic() - began
    over, _legs, _caps = run_overshoot(run)
    steps = run.passes.get().steps.count()
    return Flood(overshoot=over, cause=run.cause, steps=steps, output_bytes=FLOOD_BYTES, seconds=seconds)


# ---------------------------------------------------------------- (c) cancel


@dataclass
class Cancel:
    seconds: float
    left: int
    state: str


def bench_cancel(env: Environment) -> Cancel:
    from runs import services
    from runs.models import Run
    from tests.conftest import drive
    from tests.fake_model import FakeModel, tool

    marker = f"rysh-bench-sleep-{time.time_ns()}"
    path = coding_recipe(env, "cancel")
    model = FakeModel(task=[{"text": "sleep", "tools": [tool("bash", command=f"exec -a {marker} sleep 300")]}])
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    asked: dict[str, float] = {}

    def cancel_when_running() -> None:
        from django.db import connection

        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not _alive(marker):
                time.sleep(0.02)
            asked["at"] = time.monotonic()
            services.run_cancel(run=Run.objects.get(pk=run.pk))
        finally:
            connection.close()

    thread = threading.Thread(target=cancel_when_running, daemon=True)
    thread.start()
    run = drive(run, model)
    let_go = time.monotonic()
    thread.join(5)
    return Cancel(seconds=let_go - asked.get("at", let_go), left=_alive(marker), state=run.state_label)


def _alive(marker: str) -> int:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    return len(found)


def report(a: Startup, b: Flood, c: Cancel) -> list[str]:
    return [
        "(a) start-up per command, median:",
        f"    sandboxed (bubblewrap)   {a.sandbox_ms:7.1f} ms",
        f"    unsandboxed (our runner) {a.unsandboxed_ms:7.1f} ms",
        f"    bare subprocess          {a.bare_ms:7.1f} ms",
        f"    the sandbox adds         {a.sandbox_ms - a.bare_ms:7.1f} ms a command "
        f"({a.sandbox_ms / a.bare_ms:.2f}x bare)",
        f"(b) a {b.output_bytes / 1e6:.0f} MB output flood in a run: {b.steps} steps, ended '{b.cause}' in "
        f"{b.seconds:.1f} s; tokens over any ceiling: {b.overshoot}",
        f"(c) cancel during sleep 300: {c.state} {c.seconds:.2f} s after the request; processes left: {c.left}",
        f"sandbox_ms={a.sandbox_ms:.1f} bare_ms={a.bare_ms:.1f} flood_overshoot_tokens={b.overshoot} "
        f"cancel_s={c.seconds:.2f} left_processes={c.left}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats of (a)")
    options = parser.parse_args(argv)
    env = set_up()
    try:
        from agents.sandbox import sandbox_problem
        from runs.wiring import sandbox_config

        problem = sandbox_problem(sandbox_config())
        if problem:
            print(f"the sandbox cannot start here: {problem}")
            return 1
        lines = report(bench_startup(env, 10 if options.quick else 40), bench_flood(env), bench_cancel(env))
    finally:
        env.cleanup()
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
