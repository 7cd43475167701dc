"""Chaos benchmark: `python -m bench.chaos [--quick] [--seed N]`.

Scale-out for real — PostgreSQL, the Redis broker and two `manage.py qcluster` processes — runs
8 Claude runs (the provider that talks HTTP) against the fake Messages server
(tests/fakes/anthropic_server.py) with 1 s of latency per call, while it injects, at seeded
random moments while runs are in flight:

- SIGKILL of a whole cluster (its process group: pusher, monitor, workers), at least 5 times,
  each aimed at a cluster that holds a running run; the cluster is started again 1-3 s later;
- a Redis restart (`SHUTDOWN NOSAVE`, 2 s down, started again as the machine starts it: it
  keeps nothing on disk, so whatever was queued in it is gone);
- a PostgreSQL connection drop: every backend of the bench's database is terminated
  (`pg_terminate_backend`), the bench's own connection aside; no other database is touched;
- API faults: 429 with retry-after, 529 (twice in a row), 529 inside a started stream, 408,
  and a 504 after a 4 s hang (a gateway timing out);
- a results folder that becomes unwritable for 6 s while its run writes to it (`chattr +i`
  when the bench runs as root, which chmod does not stop; chmod 0500 otherwise).

The bench plays the every-minute sweeper (runs.worker.sweep_lost_runs, the schedule's entry
point) every 2 s, with RYSH_WORKER_LOST_SECONDS=10 and RYSH_WORKER_LOST_RETRIES=20.

The fake model saves notes.md at every step (so an unwritable folder shows as a failed
save, which it tries again), ends a pass after 10 steps with a saved file, and the judge says
YES once the notes carry the final marker (pass 2). The fake server's own log (one Exchange a
request, with the run it belongs to, its start and end, and the tokens it billed) is the truth:

- landed: finished, with run-report.md and the result file its last pass names on disk;
- hung: not finished by the deadline; lost_results: finished but a file it reports is missing;
- overshoot_tokens: tokens past a ceiling (the run's worst case and outer total, each leg's
  allotment), by the server's log and by the run's ledger (bench.engine.run_overshoot);
- undercounted_tokens: tokens the server billed for a run minus what its ledger counted, when
  positive (counted = input + cache write + output, cache reads apart, on both sides);
- double_driven: pairs of calls for the same run in flight at the server at once.

Needs PostgreSQL (RYSH_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test; a
throwaway database is created on it and dropped) and Redis (RYSH_TEST_REDIS_URL, else
redis://127.0.0.1:6379; database 11, flushed before and after). Exit status 2 when either does
not answer, 1 unless every run landed and the other counts are 0. The last line:
runs=<n> landed=<n> overshoot_tokens=<n> undercounted_tokens=<n> double_driven=<n> hung=<n> lost_results=<n>
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import FAKE_KEY, Installation, RedisService, service_urls, services_problem, tagger, texts

ROOT = Path(__file__).resolve().parent.parent
REDIS_DB = 11  # apart from the live bench (12) and the scale-out tests (13-15)
LATENCY = 1.0  # seconds before the first byte of every answer
SWEEP_EVERY = 2.0
LOST_SECONDS = 10
LOST_RETRIES = 20
TAG = re.compile(r"chaos-run-\d+")
PASS_OF = re.compile(r"This is pass (\d+) of a loop")
COMPLETE = "[[complete]]"

RECIPE = """\
---
loop:
  do:
    max_iterations: 40
    max_duration: 5m
    budget:
      size: 60p
  while:
    max_iterations: 3
    prompts:
      until: "{tag}: the notes are done."
    budget: 400p
---
Keep the notes of {tag} in the results folder: save notes.md at every step, then reply with a
one-line summary.
"""


# ---------------------------------------------------------------- the fake model (pure)


tag_of = tagger(TAG)  # which run a request belongs to: the chaos-run-NN its recipe names


def last_save_ok(messages: list[dict]) -> bool | None:
    """Whether the newest save_result call worked (None: no save yet)."""
    names: dict[str, str] = {}
    outcome = None
    for message in messages:
        if not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            elif block.get("type") == "tool_result" and names.get(block.get("tool_use_id")) == "save_result":
                outcome = not block.get("is_error")
    return outcome


def respond(body: dict, steps: int) -> dict:
    """The fake model: a judge (no tools) or a task leg that saves notes.md at every step."""
    if not body.get("tools"):
        said = " ".join(t for m in body.get("messages") or [] for t in texts(m.get("content")))
        if COMPLETE in said:
            return {"text": "YES\nthe notes are complete"}
        return {"text": "NO\nthe notes are still a draft"}
    messages = body["messages"]
    first = " ".join(texts(messages[0].get("content")))
    found = PASS_OF.search(first)
    number = int(found.group(1)) if found else 1
    tag = tag_of({"m": first}) or "chaos-run-?"
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    if turns >= steps and last_save_ok(messages):
        return {"text": f"Done: the notes of {tag} are saved."}
    final = number >= 2 and turns >= steps - 1
    content = f"# {tag}\n\npass {number}, step {turns + 1}\n" + (f"{COMPLETE}\n" if final else "draft\n")
    return {
        "text": f"Saving the notes ({turns + 1}).",
        "tool_calls": [{"name": "save_result", "input": {"filename": "notes.md", "content": content}}],
    }


# ---------------------------------------------------------------- the server's log (pure)


def double_driven(exchanges) -> dict[str, int]:
    """Per tag, the pairs of requests in flight at the server at the same time (an exchange
    still open counts as open until the end of time)."""
    by_tag: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for x in exchanges:
        if x.tag:
            by_tag[x.tag].append((x.started, x.ended if x.ended is not None else float("inf")))
    found = {}
    for tag, spans in by_tag.items():
        spans.sort()
        pairs = 0
        for i, (_start, end) in enumerate(spans):
            for later_start, _ in spans[i + 1 :]:
                if later_start >= end:
                    break
                pairs += 1
        if pairs:
            found[tag] = pairs
    return found


def leg_of(body: dict) -> tuple[int, str]:
    """(pass, leg) of a request: the judge has no tools; pass N > 1 says so in its first turn."""
    if not body.get("tools"):
        return 0, "judging"  # the judge never sees the pass number: checked in the totals
    messages = body.get("messages") or [{}]
    found = PASS_OF.search(" ".join(texts(messages[0].get("content"))))
    return (int(found.group(1)) if found else 1), "task"


def server_overshoot(billed_by_leg: dict[tuple[int, str], int], total: int, plan: dict) -> int:
    """Tokens the server billed past the run's worst case, its outer total or a task leg's
    allotment (the judge is bounded per call; its calls count in the totals)."""
    over = max(0, total - plan["worst_tokens"])
    if plan["outer_tokens"]:
        over += max(0, total - plan["outer_tokens"])
    cap = plan["split"]["task"]["tokens"]
    over += sum(max(0, tokens - cap) for (_, leg), tokens in billed_by_leg.items() if leg == "task")
    return over


@dataclass
class Tally:
    runs: int
    landed: int = 0
    overshoot_tokens: int = 0
    undercounted_tokens: int = 0
    double_driven: int = 0
    hung: int = 0
    lost_results: int = 0

    def line(self) -> str:
        return (
            f"runs={self.runs} landed={self.landed} overshoot_tokens={self.overshoot_tokens} "
            f"undercounted_tokens={self.undercounted_tokens} double_driven={self.double_driven} "
            f"hung={self.hung} lost_results={self.lost_results}"
        )

    @property
    def clean(self) -> bool:
        return self.landed == self.runs and not (
            self.overshoot_tokens or self.undercounted_tokens or self.double_driven or self.hung or self.lost_results
        )


# ---------------------------------------------------------------- the fault plan (pure)


@dataclass(order=True)
class Fault:
    at: float  # seconds after the runs were started
    kind: str = field(compare=False)  # kill | redis | postgres | api | unwritable
    detail: str = field(default="", compare=False)


API_FAULTS = ("429", "529x2", "529-mid-stream", "408", "504-after-hang")


def plan_faults(rng: random.Random, *, kills: int, window: float) -> list[Fault]:
    """Kills spread over the window (one a slot, at a random moment in it), the other faults
    at random moments in it."""
    slot = window / kills
    faults = [Fault(round(slot * n + rng.uniform(0.15, 0.85) * slot, 1), "kill") for n in range(kills)]
    for kind in ("redis", "postgres", "unwritable"):
        faults.append(Fault(round(rng.uniform(0.1, 0.9) * window, 1), kind))
    for name in API_FAULTS:
        faults.append(Fault(round(rng.uniform(0.05, 0.95) * window, 1), "api", name))
    return sorted(faults)


# ---------------------------------------------------------------- the results folder


def set_writable(folder: Path, writable: bool) -> str:
    """Make a folder unwritable (or writable again). Root ignores the mode bits, so as root the
    folder is made immutable instead."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i" if writable else "+i", str(folder)], check=True, capture_output=True)
        return "chattr +i"
    folder.chmod(0o700 if writable else 0o500)
    return "chmod 0500"


# ---------------------------------------------------------------- the bench


class ChaosTally:
    """What a chaos run did, read back from the database and the fake server once it ended (the
    Chaos installation it is mixed into holds both)."""

    def tally(self) -> Tally:
        from django.db.models import Sum

        from bench.engine import run_overshoot
        from runs.engine.verdicts import REPORT_NAME
        from runs.models import LedgerEntry, Pass, Run

        exchanges = list(self.fake.exchanges)
        billed: dict[str, int] = defaultdict(int)
        by_leg: dict[str, dict[tuple[int, str], int]] = defaultdict(lambda: defaultdict(int))
        calls: dict[str, int] = defaultdict(int)
        for x, request in zip(exchanges, self._bodies(), strict=False):
            if x.tag:
                billed[x.tag] += x.billed
                calls[x.tag] += 1
                by_leg[x.tag][leg_of(request)] += x.billed
        doubles = double_driven(exchanges)
        tally = Tally(runs=len(self.ids), double_driven=sum(doubles.values()))
        print()
        print(f"{'run':>5} {'state':<22} {'passes':>6} {'lost':>4} {'calls':>5} {'server':>8} {'ledger':>8}  cause")
        for run in Run.objects.filter(pk__in=self.ids).order_by("pk"):
            tag = TAG.search(run.recipe_text).group(0)
            ledger = LedgerEntry.objects.filter(run=run).aggregate(s=Sum("counted_tokens"))["s"] or 0
            counted = ledger
            if ledger != run.tokens_counted:
                print(f"  run #{run.pk}: the run's total ({run.tokens_counted}) is not its ledger's ({ledger})")
            over_ledger = run_overshoot(run)[0] if run.state == "finished" else 0
            over_server = server_overshoot(by_leg[tag], billed[tag], run.plan)
            tally.overshoot_tokens += max(over_ledger, over_server)
            tally.undercounted_tokens += max(0, billed[tag] - counted)
            folder = Path(run.output_dir)
            last = Pass.objects.filter(run=run).order_by("-number").first()
            reported = [REPORT_NAME] + ([last.result_file] if last and last.result_file else [])
            missing = [name for name in reported if not (folder / name).is_file()]
            if run.state != "finished":
                tally.hung += 1
            elif missing:
                tally.lost_results += 1
            elif last and last.result_file:
                tally.landed += 1
            passes = Pass.objects.filter(run=run).count()
            cause = run.cause or f"({run.state_label})"
            if missing and run.state == "finished":
                cause += f"  [missing: {', '.join(missing)}]"
            print(
                f"{'#' + str(run.pk):>5} {run.state_label:<22} {passes:>6} {run.lost_count:>4} {calls[tag]:>5} "
                f"{billed[tag]:>8} {counted:>8}  {cause}"
            )
        self.diagnose([pk for pk in self.ids if pk not in self.announced])
        for tag, pairs in doubles.items():
            print(f"  double driven: {tag}: {pairs} pair(s) of calls in flight at once")
        statuses: dict[int, int] = defaultdict(int)
        for x in exchanges:
            statuses[x.status] += 1
        print(
            f"\nserver log: {len(exchanges)} Messages calls ("
            + ", ".join(f"{code}: {n}" for code, n in sorted(statuses.items()))
            + f"), {sum(billed.values()):,} tokens billed; "
            + f"{sum(1 for x in exchanges if x.aborted)} answers cut off by a closed connection"
        )
        print(
            "faults injected: "
            + ", ".join(
                f"{kind} {self.injected.get(kind, 0)}" for kind in ("kill", "redis", "postgres", "api", "unwritable")
            )
        )
        return tally

    def diagnose(self, unfinished: list[int]) -> None:
        """For a run that did not finish: its last events; the clusters' logs are kept."""
        import shutil

        from runs.models import RunEvent

        if not unfinished:
            return
        for pk in unfinished:
            events = list(RunEvent.objects.filter(run_id=pk).order_by("-pk")[:6])[::-1]
            print(f"  run #{pk}, last events: " + " | ".join(f"{e.kind}: {e.message[:90]}" for e in events))
        kept = Path(f"/tmp/rysh-chaos-{self.args.seed}-logs")
        kept.mkdir(exist_ok=True)
        for log in self.env.work.glob("qcluster-*.log"):
            shutil.copy(log, kept / log.name)
        print(f"  the clusters' logs are kept in {kept}")

    def _bodies(self):
        requests = [r for r in self.fake.requests]
        return [r.json if isinstance(r.json, dict) else {} for r in requests]


class Chaos(ChaosTally, Installation):
    def __init__(self, args, pg_url: str, redis: RedisService):
        super().__init__()
        self.args, self.pg_url, self.redis = args, pg_url, redis
        self.rng = random.Random(args.seed)
        self.steps = 6 if args.quick else 14
        self.workers = 3
        self.timeline: list[str] = []
        self.t0 = time.monotonic()
        self.incarnation: dict[str, int] = {}
        self.restart_at: dict[str, float] = {}
        self.unwritable: tuple[float, Path, int] | None = None
        self.injected: dict[str, int] = defaultdict(int)
        self.announced: set[int] = set()

    def say(self, text: str) -> None:
        line = f"  t={time.monotonic() - self.t0:6.1f}s  {text}"
        self.timeline.append(line)
        print(line, flush=True)

    # -- clusters

    def start_cluster(self, label: str) -> None:
        n = self.incarnation[label] = self.incarnation.get(label, 0) + 1
        self.add_cluster(
            label,
            self.workers,
            name=f"qcluster-{label}{n}",
            environ={**self.fake.environ(FAKE_KEY), "LOG_LEVEL": "INFO"},
        )

    def holders(self) -> dict[str, list[int]]:
        """Which cluster holds which running run (by the worker pid on the run)."""
        from bench.engine import group_members
        from runs.models import Run

        pids = {label: set(group_members(c.proc.pid)) for label, c in self.clusters.items()}
        held: dict[str, list[int]] = defaultdict(list)
        for pk, worker in Run.objects.filter(state="running").values_list("pk", "worker"):
            pid = int(worker.rsplit(":", 1)[-1]) if worker else 0
            for label, members in pids.items():
                if pid in members:
                    held[label].append(pk)
        return held

    # -- faults

    def inject(self, fault: Fault) -> bool:
        """Inject a fault now; False to try again a little later (nothing in flight to hit)."""
        from runs.models import Run

        running = list(Run.objects.filter(state="running").values_list("pk", flat=True))
        if not running:
            return False
        if fault.kind == "kill":
            held = self.holders()
            candidates = [label for label in self.clusters if held.get(label) and label not in self.restart_at]
            if not candidates:
                return False
            label = self.rng.choice(sorted(candidates))
            cluster = self.clusters[label]
            cluster.kill()
            self.injected["kill"] += 1
            runs = ", ".join(f"#{pk}" for pk in held[label])
            self.say(f"SIGKILL cluster {label}{self.incarnation[label]} (pgid {cluster.proc.pid}; running {runs})")
            self.restart_at[label] = time.monotonic() + self.rng.uniform(1, 3)
        elif fault.kind == "redis":
            started = time.monotonic()
            self.redis.stop()
            time.sleep(2.0)
            self.redis.start()
            self.injected["redis"] += 1
            self.say(f"Redis restarted: SHUTDOWN NOSAVE, back after {time.monotonic() - started:.1f}s (queue emptied)")
        elif fault.kind == "postgres":
            self.injected["postgres"] += self.terminate_backends()
        elif fault.kind == "api":
            self.api_fault(fault.detail)
            self.injected["api"] += 1
        elif fault.kind == "unwritable":
            pk = self.rng.choice(running)
            folder = Path(Run.objects.get(pk=pk).output_dir)
            how = set_writable(folder, False)
            seconds = 4.0 if self.args.quick else 6.0
            self.unwritable = (time.monotonic() + seconds, folder, pk)
            self.injected["unwritable"] += 1
            self.say(f"results folder of run #{pk} unwritable ({how}) for {seconds:g}s")
        return True

    def terminate_backends(self) -> int:
        import psycopg
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            ours = cursor.fetchone()[0]
        with psycopg.connect(self.pg_url, autocommit=True) as admin:
            rows = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid() AND pid <> %s",
                (self.env.database, ours),
            ).fetchall()
        self.say(f"PostgreSQL: terminated {len(rows)} backend(s) of {self.env.database} (the bench's own aside)")
        return 1

    def api_fault(self, name: str) -> None:
        fake = self.fake
        if name == "429":
            fake.fail_next(429, retry_after=1)
            said = "429 rate_limit_error, retry-after 1"
        elif name == "529x2":
            fake.fail_next(529, times=2)
            said = "529 overloaded_error, twice"
        elif name == "529-mid-stream":
            fake.fail_next(529, mid_stream=True)
            said = "529 overloaded_error inside a started stream"
        elif name == "408":
            fake.fail_next(408)
            said = "408 request timeout"
        else:
            fake.fail_next(504, message="Gateway timeout")
            fake.delay_next(4.0)
            said = "504 gateway timeout after a 4s hang"
        self.say(f"API: the next call gets {said}")

    def housekeeping(self) -> None:
        now = time.monotonic()
        for label, when in list(self.restart_at.items()):
            if now >= when:
                del self.restart_at[label]
                self.start_cluster(label)
                self.say(f"cluster {label}{self.incarnation[label]} started again")
        if self.unwritable and now >= self.unwritable[0]:
            _, folder, pk = self.unwritable
            set_writable(folder, True)
            self.unwritable = None
            self.say(f"results folder of run #{pk} writable again")

    def sweep(self) -> None:
        from django.db import close_old_connections, connection

        from runs import worker

        try:
            for line in worker.sweep_lost_runs():
                self.say(f"sweeper: {line}")
        except Exception as exc:  # noqa: BLE001 - e.g. Redis is down while it re-queues
            self.say(f"sweeper failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
            connection.close()
            close_old_connections()

    def announce_ends(self) -> int:
        from runs.models import Run

        finished = 0
        for pk, cause in Run.objects.filter(pk__in=self.ids, state="finished").values_list("pk", "cause"):
            finished += 1
            if pk not in self.announced:
                self.announced.add(pk)
                self.say(f"run #{pk} finished: {cause}")
        return finished

    # -- the whole thing

    def go(self) -> Tally:
        from bench import engine

        n_runs = 4 if self.args.quick else 8
        kills = 2 if self.args.quick else 5
        window = 40.0 if self.args.quick else 80.0
        deadline = 150.0 if self.args.quick else 330.0
        os.environ.update(
            {
                "RYSH_WORKER_LOST_SECONDS": str(LOST_SECONDS),
                "RYSH_WORKER_LOST_RETRIES": str(LOST_RETRIES),
            }
        )
        self.install(pg_url=self.pg_url, redis=self.redis)
        self.serve(tagger=tag_of, responder=lambda body: respond(body, self.steps), latency=LATENCY)
        try:
            return self._go(engine, n_runs, kills, window, deadline)
        finally:
            self.tear_down()

    def _go(self, engine, n_runs: int, kills: int, window: float, deadline: float) -> Tally:
        from django.db import connection

        from runs import services

        print(
            f"chaos: {n_runs} runs x 2 passes x {self.steps + 1} calls + a judge each, {LATENCY:g}s a call; "
            f"2 qclusters x {self.workers} workers; PostgreSQL {self.env.database}, Redis db {REDIS_DB}; "
            f"seed {self.args.seed}",
            flush=True,
        )
        for label in ("A", "B"):
            self.start_cluster(label)
        for label in ("A", "B"):
            self.clusters[label].wait_ready(self.workers)
        paths = [
            engine.write_recipe(self.env, f"chaos-{n:02d}", RECIPE.format(tag=f"chaos-run-{n:02d}"))
            for n in range(n_runs)
        ]
        faults = plan_faults(self.rng, kills=kills, window=window)
        self.t0 = time.monotonic()
        self.ids = []
        for path in paths:
            run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="anthropic")
            self.ids.append(run.pk)
        self.say(f"{n_runs} runs queued (#{self.ids[0]}-#{self.ids[-1]}); {len(faults)} faults planned")
        next_sweep = time.monotonic() + SWEEP_EVERY
        while True:
            now = time.monotonic() - self.t0
            if faults and faults[0].at <= now:
                fault = faults.pop(0)
                if not self.inject(fault):
                    fault.at = now + 0.5
                    faults.append(fault)
                    faults.sort()
            self.housekeeping()
            if time.monotonic() >= next_sweep:
                self.sweep()
                next_sweep = time.monotonic() + SWEEP_EVERY
            finished = self.announce_ends()
            if finished == n_runs and not self.restart_at and not self.unwritable:
                break
            if now > deadline:
                self.say(f"deadline: {n_runs - finished} run(s) not finished after {deadline:.0f}s")
                break
            if connection.connection is not None and not connection.is_usable():
                connection.close()
            time.sleep(0.2)
        if faults:
            self.say("not injected (no run left in flight): " + ", ".join(f.kind + f.detail for f in faults))
        time.sleep(1.5)  # let the server's last answers end, so the log is complete
        return self.tally()

    def tear_down(self) -> None:
        if self.unwritable:
            set_writable(self.unwritable[1], True)
            self.unwritable = None
        super().tear_down(restart_redis=True)  # whatever happened, Redis runs when the bench ends


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 runs, 2 kills, shorter runs (about a minute)")
    parser.add_argument("--seed", type=int, default=20261130, help="seed of the fault plan")
    args = parser.parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    pg_url, redis_base = service_urls()
    problem = services_problem(pg_url, redis_base, REDIS_DB)
    if problem:
        print(
            f"chaos: {problem}; start the service (see docs/scale-out.md) or set RYSH_TEST_POSTGRES_URL / "
            "RYSH_TEST_REDIS_URL",
            file=sys.stderr,
        )
        return 2
    started = time.monotonic()
    chaos = Chaos(args, pg_url, RedisService(redis_base, REDIS_DB))
    tally = chaos.go()
    print(f"({time.monotonic() - started:.0f}s)")
    print(tally.line())
    return 0 if tally.clean else 1


if __name__ == "__main__":
    sys.exit(main())
