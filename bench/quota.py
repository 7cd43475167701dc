"""Quota benchmark: `python -m bench.quota [--runs N] [--quick] [--seed N]`.

Many concurrent runs against one quota, to see that the reservation holds a quota exactly
(overshoot_tokens=0) without wasting it (used_fraction near 1). Four scenarios, each in a
fresh throwaway installation (its own process, so each sets Django up anew):

- PostgreSQL + Redis, two `manage.py qcluster` processes (RYSH_WORKERS=10 each), with
  * one installation quota (window: day) of a third of what the runs would spend;
  * per-recipe quotas (window: day), each a third of what that recipe's run would spend;
- SQLite (WAL) with the ORM broker and one qcluster (RYSH_WORKERS=10), the same two.

The runs (40 by default, each its own recipe target: one active run per target) talk HTTP to
the fake Messages server (tests/fakes/anthropic_server.py, 0.5 s before each answer's first
byte) playing a greedy model: every reply spends all of its max_tokens, every task step saves
notes of a few KB (so inputs grow), and the judge never says YES, so a run goes on until its
pass cap. Recipes come in four shapes (budget per pass, passes, note size); a run spends about
100-150k counted tokens. What a run of each shape would spend is measured first, by one run
of each without a quota (in process, no latency); the quotas are a third of that.

The quotas are set (spend.services.quota_set) and the runs started in one transaction, so no
run starts before its quota is in force. A run whose call does not fit pauses as
`paused(quota: ...)` and is woken by spend (settles that release holds); the benchmark ends
when every run has finished or waits paused on a quota with nothing in flight (no pending
step, no queued or running run) for 3 s — and the sweeper's quota_wake, called then as the
every-minute schedule would, wakes nothing more (any run it does wake is counted as
sweeper_woke, and the wait goes on).

Counted by the fake server's own log (input + cache write + output of every answer billed;
cache reads apart, as the budget counts them):
- spent_tokens: all the runs' calls; quota_tokens: the quota (per-recipe: their sum);
- overshoot_tokens: max(0, spent - quota) per quota, summed (expected 0);
- used_fraction: spent / quota (the aim is >= 0.95: a reservation too pessimistic wastes the
  quota as surely as an overshoot wastes money);
- paused_on_quota: runs left paused on a quota at the end (ever_paused: runs that paused on a
  quota at least once);
- undercounted_tokens: per run, what the server billed minus what its ledger counted, when
  positive (the ledger must never count less than was billed).
Also shown, to tell where a quota's rest went: left_tokens (quota - spent) and smallest_need
(the smallest reservation a paused run waits for; the rest cannot fit it), and
reserved_per_counted (what the calls reserved / what they counted: the reservation's
pessimism; the fake's cache makes most of each call's input a cache read, which a
reservation must still cover in case the cache missed).

Needs PostgreSQL (RYSH_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test; a
throwaway database is created and dropped) and Redis (RYSH_TEST_REDIS_URL, else
redis://127.0.0.1:6379; database 10, flushed before and after). --quick: 8 runs, SQLite only.
Exit status 2 when PostgreSQL or Redis does not answer; 1 on any overshoot, undercount or a
run still in flight at the deadline. One line per scenario, then the last line, the
PostgreSQL + Redis installation-quota scenario's (SQLite's with --quick; overshoot_tokens
there is the largest of all scenarios):
runs=<n> quota_tokens=<n> spent_tokens=<n> overshoot_tokens=<n> paused_on_quota=<n> used_fraction=<x>
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.harness import FAKE_KEY, Installation, RedisService, service_urls, services_problem, tagger, texts

ROOT = Path(__file__).resolve().parent.parent
REDIS_DB = 10  # apart from chaos (11), the live bench (12) and the scale-out tests (13-15)
LATENCY = 0.5  # seconds before the first byte of every answer
WORKERS = 10  # RYSH_WORKERS of each cluster
QUIET_SECONDS = 3.0
TAG = re.compile(r"quota-run-\d+")
NOTE_BYTES = re.compile(r"notes of (\d+) bytes")
RESULT = "RESULT "  # a child's last line: its figures as JSON

# (budget per pass, passes, bytes of notes saved at every step)
SHAPES = {
    "a": ("40p", 3, 4000),
    "b": ("60p", 3, 8000),
    "c": ("30p", 4, 2000),
    "d": ("80p", 2, 6000),
}
SCENARIOS = (("postgres", "installation"), ("postgres", "recipe"), ("sqlite", "installation"), ("sqlite", "recipe"))
BACKEND_LABEL = {"postgres": "PostgreSQL + Redis, 2 qclusters", "sqlite": "SQLite, 1 qcluster"}

RECIPE = """\
---
loop:
  do:
    max_iterations: 40
    max_duration: 10m
    budget:
      size: {size}
  while:
    max_iterations: {passes}
    prompts:
      until: "{tag}: the notes are done."
---
Keep the notes of {tag} in the results folder: save notes.md (notes of {note_bytes} bytes) at
every step, then reply with a one-line summary.
"""


# ---------------------------------------------------------------- the greedy model (pure)


tag_of = tagger(TAG)  # which run a request belongs to: the quota-run-NN its recipe names


def note_text(tag: str, step: int, size: int) -> str:
    head = f"# notes of {tag}, step {step}\n\n"
    filler = "the quota holds while the runs go on; " * (size // 38 + 1)
    return (head + filler)[:size]


def respond(body: dict) -> dict:
    """A greedy model: every reply uses all of max_tokens. A task step saves notes.md (its
    size named in the prompt) and asks for more; the judge (no tools) never says YES."""
    cap = int(body.get("max_tokens") or 1)
    if not body.get("tools"):
        return {"text": "NO\nthe notes are not done yet", "output_tokens": cap}
    messages = body.get("messages") or [{}]
    first = " ".join(texts(messages[0].get("content")))
    found = NOTE_BYTES.search(first)
    size = int(found.group(1)) if found else 1000
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    tag = tag_of({"m": first}) or "quota-run-?"
    return {
        "text": f"Saving the notes ({turns + 1}).",
        "tool_calls": [
            {"name": "save_result", "input": {"filename": "notes.md", "content": note_text(tag, turns + 1, size)}}
        ],
        "output_tokens": cap,
    }


# ---------------------------------------------------------------- the plan (pure)


def plan_runs(n: int, seed: int) -> list[tuple[str, str, str]]:
    """(recipe name, tag, shape) of each run: the shapes in turn, in a seeded order."""
    letters = sorted(SHAPES)
    runs = [(f"quota-{i:02d}", f"quota-run-{i:02d}", letters[i % len(letters)]) for i in range(n)]
    random.Random(seed).shuffle(runs)
    return runs


def recipe_text(tag: str, shape: str) -> str:
    size, passes, note_bytes = SHAPES[shape]
    return RECIPE.format(tag=tag, size=size, passes=passes, note_bytes=note_bytes)


def third(tokens: int) -> int:
    return max(1, tokens // 3)


def overshoot(spent: dict[str, int], limits: dict[str, int]) -> int:
    """Tokens spent past each quota, summed (spent and limits keyed alike)."""
    return sum(max(0, spent.get(key, 0) - limit) for key, limit in limits.items())


@dataclass
class Result:
    backend: str
    scope: str
    runs: int
    quota_tokens: int = 0
    spent_tokens: int = 0
    overshoot_tokens: int = 0
    paused_on_quota: int = 0
    ever_paused: int = 0
    quota_pauses: int = 0
    finished: int = 0
    in_flight: int = 0  # neither finished nor paused on a quota at the deadline
    undercounted_tokens: int = 0
    ledger_tokens: int = 0
    untagged_tokens: int = 0
    calls: int = 0
    left_tokens: int = 0
    smallest_need: int = 0
    reserved_per_counted: float = 0.0
    sweeper_woke: int = 0
    seconds: float = 0.0

    @property
    def used_fraction(self) -> float:
        return self.spent_tokens / self.quota_tokens if self.quota_tokens else 0.0

    def headline(self) -> str:
        return (
            f"runs={self.runs} quota_tokens={self.quota_tokens} spent_tokens={self.spent_tokens} "
            f"overshoot_tokens={self.overshoot_tokens} paused_on_quota={self.paused_on_quota} "
            f"used_fraction={self.used_fraction:.3f}"
        )

    def line(self) -> str:
        quota = "installation quota" if self.scope == "installation" else "per-recipe quotas"
        return (
            f"{BACKEND_LABEL[self.backend]}, {quota}: {self.headline()} undercounted_tokens={self.undercounted_tokens} "
            f"finished={self.finished} ever_paused={self.ever_paused} quota_pauses={self.quota_pauses} "
            f"in_flight={self.in_flight} calls={self.calls} left_tokens={self.left_tokens} "
            f"smallest_need={self.smallest_need} reserved_per_counted={self.reserved_per_counted:.2f} "
            f"sweeper_woke={self.sweeper_woke} ({self.seconds:.0f}s)"
        )

    @property
    def clean(self) -> bool:
        return not (self.overshoot_tokens or self.undercounted_tokens or self.in_flight)


def last_line(results: list[Result]) -> str:
    """The headline of the PostgreSQL installation scenario (else the first one), with the
    largest overshoot of all scenarios when any overshot."""
    main = next((r for r in results if (r.backend, r.scope) == ("postgres", "installation")), results[0])
    worst = max(r.overshoot_tokens for r in results)
    if worst == main.overshoot_tokens:
        return main.headline()
    return Result(**{**asdict(main), "overshoot_tokens": worst}).headline()


# ---------------------------------------------------------------- one scenario (a child process)


def say(text: str) -> None:
    print(text, flush=True)


def calibrate() -> dict[str, int]:
    """What one run of each shape spends with no quota: the server's count, in process."""
    from bench import engine

    installation = Installation()
    env = installation.install()
    from runs import services, worker
    from runs.wiring import arm_run

    fake = installation.serve(tagger=tag_of, responder=respond)
    spent = {}
    try:
        for n, shape in enumerate(sorted(SHAPES)):
            tag = f"quota-run-{90 + n}"
            path = engine.write_recipe(env, f"calibrate-{shape}", recipe_text(tag, shape))
            run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="anthropic")
            worker.execute(run.pk, arm_run)
            spent[shape] = sum(x.billed for x in fake.exchanges if x.tag == tag)
    finally:
        installation.tear_down()
    return spent


class Scenario(Installation):
    def __init__(self, backend: str, scope: str, runs: int, seed: int, expect: dict[str, int], deadline: float):
        super().__init__()
        self.backend, self.scope, self.n, self.seed = backend, scope, runs, seed
        self.expect, self.deadline = expect, deadline
        self.t0 = time.monotonic()

    def say(self, text: str) -> None:
        say(f"t={time.monotonic() - self.t0:6.1f}s  {text}")

    def go(self) -> Result:
        from bench import engine

        if self.backend == "postgres":
            pg_url, redis_base = service_urls()
            self.install(pg_url=pg_url, redis=RedisService(redis_base, REDIS_DB))
        else:
            self.install()
        try:
            self.serve(tagger=tag_of, responder=respond, latency=LATENCY)
            return self._go(engine)
        finally:
            self.tear_down()

    def _go(self, engine) -> Result:
        from django.db import transaction

        from runs import services
        from spend.services import quota_set

        labels = ("A", "B") if self.backend == "postgres" else ("A",)
        for label in labels:
            self.add_cluster(label, WORKERS, name=f"qcluster-{label}", environ=self.fake.environ(FAKE_KEY))
        for cluster in self.clusters.values():
            cluster.wait_ready(WORKERS)
        planned = plan_runs(self.n, self.seed)
        paths = {name: engine.write_recipe(self.env, name, recipe_text(tag, shape)) for name, tag, shape in planned}
        self.limits: dict[str, int] = {}  # quota key (installation, or a tag) -> tokens
        self.tags: dict[int, str] = {}
        self.t0 = time.monotonic()
        with transaction.atomic():  # the quotas and the runs together: no run starts before its quota
            if self.scope == "installation":
                self.limits["installation"] = third(sum(self.expect[shape] for _, _, shape in planned))
                quota_set(scope="installation", window="day", tokens=self.limits["installation"], dollars=None)
            for name, tag, shape in planned:
                run = services.run_start(kind="task", name_or_path=str(paths[name]), args=[], provider="anthropic")
                self.tags[run.pk] = tag
                if self.scope == "recipe":
                    self.limits[tag] = third(self.expect[shape])
                    quota_set(scope="recipe", target=run.target, window="day", tokens=self.limits[tag], dollars=None)
        self.ids = sorted(self.tags)
        self.say(
            f"{self.n} runs queued (#{self.ids[0]}-#{self.ids[-1]}) against "
            + (
                f"an installation quota of {self.limits['installation']:,} tokens"
                if self.scope == "installation"
                else f"{len(self.limits)} recipe quotas of {min(self.limits.values()):,}-{max(self.limits.values()):,}"
            )
        )
        sweeper_woke = self.wait()
        time.sleep(1.0)  # the server's last answers end: the log is complete
        return self.tally(sweeper_woke)

    def quiet(self) -> tuple[bool, str]:
        from runs.models import Run, Step

        runs = Run.objects.filter(pk__in=self.ids)
        states: dict[str, int] = defaultdict(int)
        for state, reason in runs.values_list("state", "pause_reason"):
            key = "paused on a quota" if state == "paused" and reason.startswith("quota:") else state
            states[key] += 1
        pending = Step.objects.filter(run_pass__run__in=self.ids, status="pending").count()
        said = ", ".join(f"{k} {v}" for k, v in sorted(states.items())) + f"; {pending} call(s) in flight"
        settled = states.get("finished", 0) + states.get("paused on a quota", 0)
        return settled == self.n and not pending, said

    def wait(self) -> int:
        from django.db import close_old_connections

        from runs.quota_waits import quota_wake

        woke, quiet_since, last_said, said_at = 0, None, "", 0.0
        while True:
            close_old_connections()
            quiet, said = self.quiet()
            now = time.monotonic()
            if said != last_said and now - said_at > 5:
                self.say(said)
                last_said, said_at = said, now
            if now - self.t0 > self.deadline:
                self.say(f"deadline after {self.deadline:.0f}s: {said}")
                return woke
            if not quiet:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= QUIET_SECONDS:
                lines = quota_wake()  # what the every-minute sweeper would do next
                if not lines:
                    self.say(f"quiet: {said}")
                    return woke
                woke += len(lines)
                self.say(f"the sweeper's quota_wake woke {len(lines)} run(s) that nothing else woke")
                quiet_since = None
            time.sleep(0.25)

    def tally(self, sweeper_woke: int) -> Result:
        from django.db.models import Sum

        from runs.models import LedgerEntry, Run, RunEvent, Step

        exchanges = list(self.fake.exchanges)
        billed: dict[str, int] = defaultdict(int)
        for x in exchanges:
            billed[x.tag or ""] += x.billed
        result = Result(backend=self.backend, scope=self.scope, runs=self.n, sweeper_woke=sweeper_woke)
        result.seconds = time.monotonic() - self.t0
        result.calls = sum(1 for x in exchanges if x.status == 200)
        result.spent_tokens = sum(billed.values())
        result.untagged_tokens = billed.get("", 0)
        result.quota_tokens = sum(self.limits.values())
        if self.scope == "installation":
            spent = {"installation": result.spent_tokens}
        else:
            spent = dict(billed)
        result.overshoot_tokens = overshoot(spent, self.limits)
        ledger = dict(
            LedgerEntry.objects.filter(run__in=self.ids)
            .values("run")
            .annotate(tokens=Sum("counted_tokens"))
            .values_list("run", "tokens")
        )
        result.ledger_tokens = sum(v or 0 for v in ledger.values())
        result.undercounted_tokens = sum(max(0, billed[tag] - (ledger.get(pk) or 0)) for pk, tag in self.tags.items())
        waiting = []
        for run in Run.objects.filter(pk__in=self.ids):
            if run.state == "finished":
                result.finished += 1
            elif run.state == "paused" and run.pause_reason.startswith("quota:"):
                result.paused_on_quota += 1
                waiting.append(run.pk)
            else:
                result.in_flight += 1
        paused = RunEvent.objects.filter(run__in=self.ids, kind="paused", data__reason__startswith="quota:")
        result.quota_pauses = paused.count()
        result.ever_paused = paused.values("run").distinct().count()
        needs = {}
        for run_id, data in paused.order_by("run_id", "-id").values_list("run_id", "data"):
            needs.setdefault(run_id, int(data.get("need_tokens") or 0))
        result.left_tokens = sum(max(0, limit - spent.get(key, 0)) for key, limit in self.limits.items())
        result.smallest_need = min((needs[pk] for pk in waiting if pk in needs), default=0)
        steps = Step.objects.filter(run_pass__run__in=self.ids, status="done", counted_tokens__gt=0).aggregate(
            reserved=Sum("reserved_tokens"), counted=Sum("counted_tokens")
        )
        if steps["counted"]:
            result.reserved_per_counted = steps["reserved"] / steps["counted"]
        if result.untagged_tokens:
            self.say(f"note: {result.untagged_tokens} tokens billed for requests no run's tag names")
        if self.scope == "recipe":
            self.per_recipe(spent, needs, waiting)
        return result

    def per_recipe(self, spent: dict[str, int], needs: dict[int, int], waiting: list[int]) -> None:
        """Per recipe: its quota, what it spent, what was left and what its paused run waits for."""
        by_tag = {tag: pk for pk, tag in self.tags.items()}
        fractions = []
        for tag in sorted(self.limits):
            fractions.append((spent.get(tag, 0) / self.limits[tag], tag))
        low = sorted(fractions)[:3]
        self.say(
            "lowest used fractions: "
            + ", ".join(
                f"{tag} {f:.2f} (quota {self.limits[tag]:,}, left {self.limits[tag] - spent.get(tag, 0):,}, "
                f"waits for {needs.get(by_tag[tag], 0):,})"
                for f, tag in low
            )
        )


# ---------------------------------------------------------------- the parent


def child(args: list[str]) -> dict:
    """Run this module with `args` in a fresh process; its lines are shown indented, its
    RESULT line returned."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.quota", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    found = None
    for line in proc.stdout:
        if line.startswith(RESULT):
            found = json.loads(line[len(RESULT) :])
        else:
            print("    " + line.rstrip(), flush=True)
    if proc.wait() != 0 or found is None:
        raise RuntimeError(f"bench.quota {' '.join(args)} failed (exit status {proc.returncode})")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quota", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, help="concurrent runs in each scenario (default 40, quick 8)")
    parser.add_argument("--quick", action="store_true", help="8 runs, SQLite only (about three minutes)")
    parser.add_argument("--seed", type=int, default=20261201, help="seed of the order the runs start in")
    parser.add_argument("--scenario", help=argparse.SUPPRESS)  # backend:scope, in a child process
    parser.add_argument("--calibrate", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--expect", help=argparse.SUPPRESS)  # JSON: shape -> tokens a run spends
    args = parser.parse_args(argv)
    runs = args.runs or (8 if args.quick else 40)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if args.calibrate:
        print(RESULT + json.dumps(calibrate()), flush=True)
        return 0
    if args.scenario:
        backend, scope = args.scenario.split(":")
        deadline = 240.0 if runs <= 10 else 900.0
        result = Scenario(backend, scope, runs, args.seed, json.loads(args.expect), deadline).go()
        print(RESULT + json.dumps(asdict(result)), flush=True)
        return 0

    scenarios = [s for s in SCENARIOS if s[0] == "sqlite"] if args.quick else list(SCENARIOS)
    if not args.quick:
        problem = services_problem(*service_urls(), REDIS_DB)
        if problem:
            print(
                f"quota: {problem}; start the service or set RYSH_TEST_POSTGRES_URL / RYSH_TEST_REDIS_URL "
                "(or use --quick: SQLite only)",
                file=sys.stderr,
            )
            return 2
    started = time.monotonic()
    print("quota: what a run of each shape spends, with no quota (one run each, in process) ...", flush=True)
    expect = child(["--calibrate"])
    print(
        "  "
        + ", ".join(
            f"{shape}: {SHAPES[shape][0]} x {SHAPES[shape][1]} passes, notes {SHAPES[shape][2]} B -> {tokens:,} tokens"
            for shape, tokens in sorted(expect.items())
        ),
        flush=True,
    )
    results = []
    for backend, scope in scenarios:
        print(f"quota: {runs} runs, {BACKEND_LABEL[backend]} x {WORKERS} workers, {scope} quota ...", flush=True)
        found = child(
            [
                "--scenario",
                f"{backend}:{scope}",
                "--runs",
                str(runs),
                "--seed",
                str(args.seed),
                "--expect",
                json.dumps(expect),
            ]
        )
        results.append(Result(**found))
    print(f"\n({time.monotonic() - started:.0f}s; seed {args.seed}; {LATENCY:g}s before each answer)")
    for result in results:
        print(result.line())
    print(last_line(results))
    return 0 if all(r.clean for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
