"""Evals benchmark: `python -m bench.evals [--cases N] [--workers N] [--latency S]`.

A suite of N cases (20 by default) of one task recipe, on main and on a change request that
edits the recipe (2 x N runs, the review's Evals panel's button: change_suites_start), on a real
`manage.py qcluster` (RYSH_WORKERS=--workers, 40 by default: a worker for every run; the ORM broker on a throwaway
SQLite installation, the embedded default) against the fake Messages server
(tests/fakes/anthropic_server.py, --latency seconds before each answer's first byte). Each case's
run saves notes in a few steps; half the cases have a judge.md (one rubric call each when graded),
and each case's grading runs on the workers too (evals.tasks.grade_case).

Printed side by side:
- suite wall time: from the press to both suites graded, against the all-parallel ideal (the
  longest case run, from its start to its end: no suite can be over sooner, even with every
  case on a worker of its own and grading free); suite_efficiency = ideal / wall (1.0: the
  suites cost nothing beyond their longest run; with fewer workers than runs it is at most
  about workers / runs);
- tokens: what the ledger counted for each suite against its ceiling, and what the fake server
  billed; overshoot_tokens = the counted tokens over the ceiling, summed over the suites (must
  be 0), and the server's billed tokens over the two ceilings together (must be 0 too);
- `--result`: both suites graded again (suite_regrade: the assertions free, the rubrics' judge
  calls only) — its seconds against the live suite's, and its model calls against the live one's.

Last line: suite_efficiency=<x> overshoot_tokens=<n> result_grade_s=<s>
Exit status 1 on any overshoot or a suite not graded by the deadline.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
import time
from dataclasses import dataclass

from bench.engine import FAKE_KEY, QCluster, set_up
from bench.harness import tagger

CASE_TAG = re.compile(r"bench-case-\d{2}")
STEPS = 3  # save_result steps of a case's run before it answers
NOTE_BYTES = 1_500
DEADLINE_SECONDS = 600


def recipe_text(variant: str) -> str:
    """The recipe under test; the change edits its prompt (variant A on main, B on the change)."""
    return textwrap.dedent(
        f"""\
        ---
        description: Keep notes on the case's topic (the evals benchmark, variant {variant}).
        loop:
          do:
            max_iterations: 12
            budget:
              size: 20p
        ---
        Keep notes on the topic below in {{{{output_dir}}}}/notes.md with save_result (variant {variant}),
        then answer with one line that says they are done.
        """
    )


def case_files(index: int) -> dict[str, str]:
    """Case NN: its tag in the task, an assertion on the answer, and every other case a rubric."""
    name = f"case-{index:02d}"
    files = {
        f"{name}/task.md": f"Topic: bench-case-{index:02d}, the tides of the week.\n",
        f"{name}/expect.yaml": 'output_matches: ["(?i)notes .* done"]\nmax_tokens: 60000\n',
    }
    if index % 2 == 0:
        files[f"{name}/judge.md"] = "The notes were saved and the answer says they are done.\n"
    return files


def respond(body: dict) -> dict:
    """The fake model: a judge (rubric) says YES; a task leg saves notes STEPS times, then answers."""
    if "independent judge" in str(body.get("system")):
        return {"text": "YES\nthe notes are saved and the answer says so"}
    done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    tag = CASE_TAG.search(str(body.get("messages", [])[:1]))
    name = tag.group(0) if tag else "bench-case"
    if done < STEPS:
        note = (f"{name}, step {done + 1}: " + "the tide rises and falls. " * 80)[:NOTE_BYTES]
        return {
            "text": f"Saving notes ({done + 1}/{STEPS}).",
            "tool_calls": [{"name": "save_result", "input": {"filename": "notes.md", "content": note}}],
        }
    return {"text": f"The notes of {name} are done."}


@dataclass
class Figures:
    cases: int
    workers: int
    wall_s: float = 0.0
    ideal_s: float = 0.0
    counted: dict[str, int] | None = None  # side -> ledger tokens
    ceilings: dict[str, int] | None = None  # side -> budget_tokens
    billed: int = 0  # what the fake server billed for the suites' calls
    live_calls: int = 0
    result_grade_s: float = 0.0
    result_calls: int = 0
    passed: dict[str, str] | None = None  # side -> "n/m"

    @property
    def efficiency(self) -> float:
        return self.ideal_s / self.wall_s if self.wall_s else 0.0

    @property
    def overshoot_tokens(self) -> int:
        over = sum(max(0, self.counted[s] - self.ceilings[s]) for s in self.counted or {})
        return over + max(0, self.billed - sum((self.ceilings or {}).values()))

    def lines(self) -> list[str]:
        sides = sorted(self.counted or {})
        rows = [
            ("", "live suite", "all-parallel ideal", "--result grading"),
            ("wall time", f"{self.wall_s:.2f}s", f"{self.ideal_s:.2f}s", f"{self.result_grade_s:.2f}s"),
            ("model calls", str(self.live_calls), "", str(self.result_calls)),
        ]
        for side in sides:
            rows.append(
                (
                    f"{side}: tokens",
                    f"{self.counted[side]:,} of {self.ceilings[side]:,} (ceiling)",
                    f"passed {self.passed[side]}",
                    "",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        out = [
            f"evals: {self.cases} cases x 2 sides on a qcluster of {self.workers} workers (fake Messages server)",
            *("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows),
            f"  server billed {self.billed:,} tokens for both suites; their ceilings {sum(self.ceilings.values()):,}",
        ]
        return out

    def last_line(self) -> str:
        return (
            f"suite_efficiency={self.efficiency:.2f} overshoot_tokens={self.overshoot_tokens} "
            f"result_grade_s={self.result_grade_s:.2f}"
        )


def ideal_seconds(spans: list[tuple[float, float]]) -> float:
    """The all-parallel ideal: the longest case run, start to end (each on a worker of its own)."""
    return max((end - start for start, end in spans), default=0.0)


def say(text: str) -> None:
    print(text, flush=True)


def run(cases: int, workers: int, latency: float) -> Figures:
    env = set_up()
    from tests.fakes.anthropic_server import FakeAnthropic

    figures = Figures(cases=cases, workers=workers)
    cluster = None
    try:
        with FakeAnthropic() as fake:
            fake.responder, fake.latency, fake.tagger = respond, latency, tagger(CASE_TAG)
            os.environ.update(fake.environ(FAKE_KEY))
            change, user = _install(env, cases)
            cluster = QCluster(env, workers, name="qcluster-evals", environ=fake.environ(FAKE_KEY))
            cluster.wait_ready(workers)
            _live(figures, fake, change, user)
            _regrade(figures, fake)
    finally:
        if cluster is not None:
            cluster.stop()
        env.cleanup()
    return figures


def _install(env, cases: int):
    """The recipe and its cases committed on main, synced; an editor; a change that edits it."""
    import subprocess

    from catalogue.sync import recipes_sync
    from reviews.services import change_request_open
    from tests.recipes_git import make_user

    repo = env.recipes.parents[2]
    (env.recipes / "bench-eval.md").write_text(recipe_text("A"))
    for index in range(1, cases + 1):
        for relative, text in case_files(index).items():
            path = env.recipes / "bench-eval/evals" / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    author = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run(["git", "-C", str(repo), "init", "-q", "-b", "main"], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), *author, "commit", "-q", "-m", "bench recipe"], check=True)
    recipes_sync()
    user = make_user("bench-editor", "editor")
    change = change_request_open(user=user, kind="task", name="bench-eval", text=recipe_text("B"), message="B")
    return change, user


def _live(figures: Figures, fake, change, user) -> None:
    from evals.models import SuiteState
    from evals.services import change_suites_start

    started = time.monotonic()
    main, proposed = change_suites_start(change=change, user=user)
    suites = [main, proposed]
    while time.monotonic() - started < DEADLINE_SECONDS:
        for suite in suites:
            suite.refresh_from_db()
        if all(s.state != SuiteState.RUNNING for s in suites):
            break
        time.sleep(0.1)
    figures.wall_s = time.monotonic() - started
    if any(s.state == SuiteState.RUNNING for s in suites):
        raise RuntimeError(f"the suites were not graded in {DEADLINE_SECONDS}s")
    spans = []
    for suite in suites:
        for case in suite.cases.select_related("run"):
            if case.run and case.run.started_at and case.run.ended_at:
                spans.append((case.run.started_at.timestamp(), case.run.ended_at.timestamp()))
    figures.ideal_s = ideal_seconds(spans)
    figures.counted = {s.side: s.tokens_counted for s in suites}
    figures.ceilings = {s.side: s.budget_tokens for s in suites}
    figures.passed = {s.side: f"{s.cases.filter(state='passed').count()}/{s.cases.count()}" for s in suites}
    exchanges = list(fake.exchanges)
    figures.billed = sum(e.billed for e in exchanges)
    figures.live_calls = len(exchanges)


def _regrade(figures: Figures, fake) -> None:
    from evals.models import Suite
    from evals.services import suite_regrade

    before = len(fake.exchanges)
    started = time.monotonic()
    for suite in Suite.objects.all():
        suite_regrade(suite=suite)
    figures.result_grade_s = time.monotonic() - started
    figures.result_calls = len(fake.exchanges) - before
    for suite in Suite.objects.all():  # the rubric calls of the regrade count against the ceiling too
        figures.counted[suite.side] = suite.tokens_counted
        figures.ceilings[suite.side] = suite.budget_tokens
    figures.billed = sum(e.billed for e in fake.exchanges)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.evals", description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=20, help="cases of the suite (each side), default 20")
    parser.add_argument("--workers", type=int, default=40, help="the qcluster's workers, default 40")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds before each answer, default 0.3")
    args = parser.parse_args(argv)
    figures = run(args.cases, args.workers, args.latency)
    for line in figures.lines():
        say(line)
    say(figures.last_line())
    return 1 if figures.overshoot_tokens else 0


if __name__ == "__main__":
    sys.exit(main())
