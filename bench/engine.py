"""Benchmark the do/while engine: `python -m bench.engine [--quick] [--seed N] [--profile]`.

Five measurements, side by side in one run, printed as ratios (nothing is asserted on time):

(a) overhead per step: one N-step tool-use conversation (N `list_results` calls, then a
    final text) against FakeAnthropic (a real HTTP Messages server on loopback), driven by
    - a bare loop on the SDK's `client.messages.create`,
    - the provider alone (AnthropicModel.complete in a loop, no database: streamed, in a
      worker thread, with cache breakpoints),
    - the engine (`worker.execute` armed with that provider): DB rows, ledger, events,
      checkpoint per step.
    The same stateless responder answers all three. Warm-up once, then the median of a few
    interleaved repeats. overhead_ratio = engine ms/step / bare ms/step.
(b) 20 concurrent runs on one worker machine: a real `manage.py qcluster` (RYSH_WORKERS=20,
    the ORM broker) runs 20 scripted runs (distinct recipes, `latency_seconds: 1`, 8 tool
    steps and a final text each). concurrency_efficiency = achieved steps/s / ideal steps/s,
    where ideal is every run in parallel (model calls per run x 1 s). Memory: the RSS of
    the cluster's processes (read from /proc), peak minus idle, per run.
(c) token overshoot: 1,000 random jobs (seeded) on FakeModel(adversarial=True), which spends
    the most any call could; tokens counted past any leg allotment, the judge's bound, the
    job's outer total or its worst case are summed into overshoot_tokens (expected 0).
(e) sub-agents under the parent's ceiling: (c)'s jobs delegating to sub-agents (bench.delegation):
    tokens past the parents' ceilings (expected 0), beside rysh's independent bound.
(d) what a step writes: one pass of 300 steps whose tool returns 20 KB every step (a stub
    model in process). stmts_per_step = SQL statements from the first call to the last, per
    step (BEGIN and COMMIT included); bytes_growth = bytes step 300 writes / bytes step 10
    writes, counting the parameters of INSERT and UPDATE statements (1.0: flat; a step
    that saves the whole conversation again grows with it).

Throwaway environment: a temp RYSH_DATA_DIR (fresh SQLite in WAL mode, migrated here),
temp recipes and results folders; with DATABASE_URL set to PostgreSQL, a throwaway database
on that server instead. REDIS_URL is ignored: the cluster uses the ORM broker on that
database, so nothing is pushed to a shared Redis. All of it is removed at the end.
The last line (one line) is machine-readable:
overshoot_tokens=<n> jobs=<n> overhead_ratio=<x> concurrency_efficiency=<x> peak_mb_per_run=<x>
stmts_per_step=<x> bytes_growth=<x>
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from agents.ports import ToolResult, Tools
from bench.delegation import bench_delegation
from bench.delegation import report as delegation_report

ROOT = Path(__file__).resolve().parent.parent
FAKE_KEY = "sk-ant-fake-key"
MAX_TOKENS = 8192  # what the engine asks for when the budget leaves room (DEFAULT_MAX_OUTPUT)

OVERHEAD_RECIPE = """\
---
loop:
  do:
    max_iterations: 200
    max_duration: 1h
---
Keep a close watch on the results folder: list it again and again with list_results, then
reply with a one-line summary.
"""
PARALLEL_RECIPE = """\
---
loop:
  do:
    max_iterations: 50
    max_duration: 10m
---
Take notes on {{output_dir}}: save them, then check the folder.
"""
STUB_SCRIPT = 'passes:\n  - task:\n      - text: Done.\n    judge: "YES\\nok"\n'


# ---------------------------------------------------------------- environment


@dataclass
class Environment:
    work: Path
    recipes: Path  # <repo>/.rysh/automations/tasks
    database: str | None = None  # a throwaway PostgreSQL database we created
    admin_url: str | None = None

    def cleanup(self) -> None:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may never have been set up
            pass
        if self.database and self.admin_url:
            import psycopg

            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        shutil.rmtree(self.work, ignore_errors=True)


def set_up(*, redis_url: str | None = None) -> Environment:
    """Point every setting at throwaway places, then set Django up and migrate. With
    `redis_url` (a database number of its own) the Redis broker and channel layer use it;
    without, REDIS_URL is dropped and the ORM broker runs on the throwaway database."""
    work = Path(tempfile.mkdtemp(prefix="rysh-bench-engine-"))
    env = Environment(work=work, recipes=work / "repo/.rysh/automations/tasks")
    env.recipes.mkdir(parents=True)
    os.environ.update(
        {
            "RYSH_DATA_DIR": str(work / "data"),
            "RYSH_RECIPES_REPO": str(work / "repo"),
            "RYSH_RESULTS_DIR": str(work / "results"),
            "DJANGO_SETTINGS_MODULE": "rysh_site.settings",
            "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
        }
    )
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    else:
        os.environ.pop("REDIS_URL", None)  # the ORM broker, on the throwaway database
    url = os.environ.get("DATABASE_URL")
    if url and urlparse(url).scheme.startswith("postgres"):
        import psycopg

        env.admin_url = url
        env.database = f"rysh_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{env.database}"')
        os.environ["DATABASE_URL"] = url.rsplit("/", 1)[0] + f"/{env.database}"
    elif url:
        print(f"note: DATABASE_URL is not PostgreSQL; using it as given ({urlparse(url).scheme})")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # tests.fake_model, tests.fakes.anthropic_server

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    assert str(settings.RYSH_RESULTS_DIR).startswith(str(work)), settings.RYSH_RESULTS_DIR
    assert settings.RYSH_RECIPES_REPO == str(work / "repo")
    call_command("migrate", verbosity=0)
    return env


def write_recipe(env: Environment, name: str, text: str, script: str = STUB_SCRIPT) -> Path:
    """A task recipe with its `<name>.script.yaml` beside it (the scripted provider needs one)."""
    path = env.recipes / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    (env.recipes / f"{name}.script.yaml").write_text(script, encoding="utf-8")
    return path


def start_run(path: Path):
    from runs import services

    return services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")


# ---------------------------------------------------------------- (a) overhead per step


@dataclass
class Overhead:
    steps: int  # tool steps; each conversation makes steps + 1 model calls
    repeats: int
    ms_per_call: dict[str, float]  # median per mode
    spread: dict[str, tuple[float, float]]  # min, max per mode
    queries_per_call: float
    engine_fixed_ms: float  # the engine's per-run cost outside its steps (claim, arm, report)
    nagle_bare_ms: float  # the bare loop against the fake with Nagle left on, for reference

    @property
    def calls(self) -> int:
        return self.steps + 1

    @property
    def ratio(self) -> float:
        return self.ms_per_call["engine"] / self.ms_per_call["bare"]


def responder_for(steps: int):
    """Stateless: the reply depends only on how many assistant turns the request holds."""

    def respond(body: dict) -> dict:
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if done < steps:
            return {
                "text": f"Looking at the results folder ({done + 1}/{steps}).",
                "tool_calls": [{"name": "list_results", "input": {}}],
            }
        return {"text": "Done: the folder was listed and nothing changed."}

    return respond


class Conversation:
    """What every driver of (a) sends: the engine's own system prompt, tools and first message."""

    def __init__(self, env: Environment):
        from agents.task_tools import TaskTools
        from runs.arming import arm, first_message, system_prompt

        self.path = write_recipe(env, "overhead", OVERHEAD_RECIPE)
        run = start_run(self.path)  # only to resolve what the engine will send; never executed
        spec, _plan = arm(run.recipe_text, path=run.recipe_path, kind=run.kind, overrides={})
        self.output_dir = Path(run.output_dir)
        self.model = run.executor_model
        self.system = system_prompt(spec, run.output_dir)
        self.tools_port = TaskTools(self.output_dir)
        self.tools = self.tools_port.specs()
        self.first = first_message(spec, [], run.output_dir)
        from runs.engine import finish_run

        finish_run(run, "bench: not executed")

    def messages(self) -> list[dict]:
        return [{"role": "user", "content": [{"type": "text", "text": self.first}]}]

    def tool_results(self, tool_calls: list[dict]) -> dict:
        content = []
        for call in tool_calls:
            outcome = self.tools_port.call(call["name"], call.get("input") or {})
            content.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call["id"],
                    "content": outcome.content,
                    "is_error": outcome.is_error,
                }
            )
        return {"role": "user", "content": content}


def drive_bare(conv: Conversation, base_url: str) -> tuple[float, int]:
    """The SDK alone: messages.create with tools, tool results appended, until a final text."""
    import anthropic

    client = anthropic.Anthropic(api_key=FAKE_KEY, base_url=base_url, max_retries=0)
    messages, calls = conv.messages(), 0
    started = time.perf_counter()
    while True:
        message = client.messages.create(
            model=conv.model, max_tokens=MAX_TOKENS, system=conv.system, tools=conv.tools, messages=messages
        )
        calls += 1
        content = [block.to_dict() for block in message.content]
        messages.append({"role": "assistant", "content": content})
        tool_calls = [b for b in content if b["type"] == "tool_use"]
        if message.stop_reason != "tool_use" or not tool_calls:
            break
        messages.append(conv.tool_results(tool_calls))
    seconds = time.perf_counter() - started
    client.close()
    return seconds, calls


def drive_provider(conv: Conversation, base_url: str) -> tuple[float, int]:
    """The engine's model port alone (streamed, worker thread, cache breakpoints), no database."""
    from agents.anthropic_model import AnthropicModel
    from agents.ports import ModelRequest

    model = AnthropicModel(api_key=FAKE_KEY, base_url=base_url)
    messages, calls = conv.messages(), 0
    started = time.perf_counter()
    while True:
        reply = model.complete(
            ModelRequest(
                model=conv.model,
                system=conv.system,
                messages=messages,
                tools=conv.tools,
                max_tokens=MAX_TOKENS,
                deadline=time.monotonic() + 600,
            )
        )
        calls += 1
        messages.append({"role": "assistant", "content": reply.content})
        if not reply.tool_calls:
            break
        messages.append(conv.tool_results(reply.tool_calls))
    seconds = time.perf_counter() - started
    if model._client is not None:
        model._client.close()
    return seconds, calls


def prepare_engine_run(conv: Conversation):
    """A queued run of the overhead recipe, labelled and priced as a Claude run."""
    from django.conf import settings

    from runs.models import Run

    run = start_run(conv.path)
    Run.objects.filter(pk=run.pk).update(
        provider="anthropic", executor_model=settings.RYSH_EXECUTOR_MODEL, judge_model=settings.RYSH_JUDGE_MODEL
    )
    return run


def drive_engine(
    conv: Conversation, base_url: str, *, queries: list | None = None, profile: bool = False
) -> tuple[float, int]:
    from agents.anthropic_model import AnthropicModel
    from runs import worker
    from runs.models import Step
    from runs.wiring import arm_run

    run = prepare_engine_run(conv)
    model = AnthropicModel(api_key=FAKE_KEY, base_url=base_url)
    armed_for = lambda r: arm_run(r, model=model)  # noqa: E731
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.runcall(worker.execute, run.pk, armed_for)
        seconds = time.perf_counter() - started
        print("\n-- cProfile of one engine run (top 25 by cumulative time) --")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    elif queries is not None:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            worker.execute(run.pk, armed_for)
            seconds = time.perf_counter() - started
        queries.extend(captured.captured_queries)
    else:
        started = time.perf_counter()
        worker.execute(run.pk, armed_for)
        seconds = time.perf_counter() - started
    if model._client is not None:
        model._client.close()
    run.refresh_from_db()
    assert (run.state, run.cause) == ("finished", "done"), (run.state, run.cause)
    return seconds, Step.objects.filter(run_pass__run=run).count()


def engine_fixed_cost(conv: Conversation, base_url: str, fake) -> float:
    """A run whose conversation is one call, minus the bare loop's one call: what the engine
    costs per run rather than per step (claim, arming, a new SDK client, pass rows, report)."""
    saved = fake.responder
    fake.responder = responder_for(0)
    try:
        one = [drive_engine(conv, base_url)[0] for _ in range(3)]
        bare = [drive_bare(conv, base_url)[0] for _ in range(3)]
    finally:
        fake.responder = saved
    return (statistics.median(one) - statistics.median(bare)) * 1000


def bench_overhead(env: Environment, steps: int, repeats: int, profile: bool) -> Overhead:
    from tests.fakes.anthropic_server import FakeAnthropic

    conv = Conversation(env)
    drivers = {"bare": drive_bare, "provider": drive_provider, "engine": drive_engine}
    samples: dict[str, list[float]] = {name: [] for name in drivers}
    with FakeAnthropic() as fake:
        fake.responder = responder_for(steps)
        drive_bare(conv, fake.base_url)  # warm-up (imports, first connection)
        nagle_bare = drive_bare(conv, fake.base_url)  # Nagle still on (see below)
        nagle_ms = nagle_bare[0] * 1000 / nagle_bare[1]
        # The fake writes a response's headers and body separately; with Nagle on, each call
        # then waits for the client's delayed ACK (~40 ms on Linux), a floor that would swamp
        # what is measured here. TCP_NODELAY on this fake's handler only (a class per fake).
        fake._server.RequestHandlerClass.disable_nagle_algorithm = True
        for name, drive in drivers.items():  # warm-up: imports, first connection, caches
            _, calls = drive(conv, fake.base_url)
            assert calls == steps + 1, (name, calls)
        for _ in range(repeats):  # interleaved, so drift hits every driver alike
            for name, drive in drivers.items():
                before = fake.calls
                seconds, calls = drive(conv, fake.base_url)
                assert calls == steps + 1 == fake.calls - before, (name, calls, fake.calls - before)
                samples[name].append(seconds * 1000 / calls)
        queries: list = []
        drive_engine(conv, fake.base_url, queries=queries)
        fixed = engine_fixed_cost(conv, fake.base_url, fake)
        if profile:
            drive_engine(conv, fake.base_url, profile=True)
    return Overhead(
        steps=steps,
        repeats=repeats,
        ms_per_call={k: statistics.median(v) for k, v in samples.items()},
        spread={k: (min(v), max(v)) for k, v in samples.items()},
        queries_per_call=len(queries) / (steps + 1),
        engine_fixed_ms=fixed,
        nagle_bare_ms=nagle_ms,
    )


# ---------------------------------------------------------------- (b) concurrent runs


def parallel_script(tool_steps: int, latency: float) -> str:
    turns = [
        "      - text: Saving the notes.\n"
        "        tool_calls:\n"
        "          - name: save_result\n"
        '            input: {filename: notes.md, content: "first notes"}\n'
    ]
    turns += [
        f"      - text: Checking the folder ({n + 2}/{tool_steps}).\n"
        "        tool_calls: [{name: list_results, input: {}}]\n"
        for n in range(tool_steps - 1)
    ]
    turns.append("      - text: Done.\n")
    return f"latency_seconds: {latency:g}\npasses:\n  - task:\n" + "".join(turns) + '    judge: "YES\\nfine"\n'


def group_members(pgid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        if int(fields[2]) == pgid:  # state ppid pgrp ...
            pids.append(int(entry))
    return pids


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in KiB; (0, 0) for a process that is gone."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


@dataclass
class Snapshot:
    rss: dict[int, int]
    pss: dict[int, int]

    @property
    def rss_total(self) -> int:
        return sum(self.rss.values())

    @property
    def pss_total(self) -> int:
        return sum(self.pss.values())


def snapshot(pgid: int) -> Snapshot:
    rss, pss = {}, {}
    for pid in group_members(pgid):
        rss[pid], pss[pid] = memory_kb(pid)
    return Snapshot(rss, pss)


class Sampler(threading.Thread):
    """Samples the cluster's memory until stopped; keeps the sample with the largest RSS sum."""

    def __init__(self, pgid: int, every: float = 0.2):
        super().__init__(daemon=True, name="rss-sampler")
        self.pgid, self.every = pgid, every
        self.stopped = threading.Event()
        self.peak: Snapshot | None = None
        self.peak_pss = 0

    def run(self) -> None:
        while not self.stopped.is_set():
            shot = snapshot(self.pgid)
            if self.peak is None or shot.rss_total > self.peak.rss_total:
                self.peak = shot
            self.peak_pss = max(self.peak_pss, shot.pss_total)
            self.stopped.wait(self.every)


@dataclass
class Concurrency:
    runs: int
    calls_per_run: int
    latency: float
    wall: float
    last_start: float  # seconds from enqueue until the last run was claimed by a worker
    run_walls: list[float]  # each run's claim -> finished, seconds
    workers: int
    processes: int
    idle: Snapshot
    peak: Snapshot
    peak_pss_kb: int
    worker_pids: list[int]
    startup: float

    @property
    def ideal_rate(self) -> float:
        return self.runs / self.latency  # every run in parallel, one call per latency

    @property
    def achieved_rate(self) -> float:
        return self.runs * self.calls_per_run / self.wall

    @property
    def efficiency(self) -> float:
        return self.achieved_rate / self.ideal_rate

    @property
    def peak_mb_per_run(self) -> float:
        return (self.peak.rss_total - self.idle.rss_total) / self.runs / 1024

    def worker_rss_mb(self, shot: Snapshot) -> list[float]:
        return sorted(shot.rss.get(pid, 0) / 1024 for pid in self.worker_pids if pid in shot.rss)


class QCluster:
    """`manage.py qcluster` in its own session; the whole process group is ended afterwards."""

    def __init__(self, env: Environment, workers: int, *, name: str = "qcluster", environ: dict | None = None):
        """`environ` is added to the cluster's environment (e.g. a fake API's address and key);
        without it, no ANTHROPIC_API_KEY reaches the cluster."""
        self.log_path = env.work / f"{name}.log"
        base = dict(os.environ, RYSH_WORKERS=str(workers), LOG_LEVEL="INFO", PYTHONUNBUFFERED="1")
        base.pop("ANTHROPIC_API_KEY", None)
        environ = {**base, **(environ or {})}
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=environ,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def worker_pids(self) -> list[int]:
        text = self.log_path.read_text(errors="replace")
        return [int(p) for p in re.findall(r"ready for work at (\d+)", text)]

    def wait_ready(self, workers: int, timeout: float = 120) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"qcluster exited ({self.proc.returncode}):\n{self.tail()}")
            if len(self.worker_pids()) >= workers:
                return time.monotonic() - started
            time.sleep(0.2)
        raise RuntimeError(
            f"qcluster: {len(self.worker_pids())}/{workers} workers ready after {timeout:.0f}s:\n{self.tail()}"
        )

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL the whole process group at once, as a machine that loses power would."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)
        self.stop()

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        # stragglers of the group (a worker that outlived its guard)
        for pid in group_members(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()


def bench_concurrency(env: Environment, runs: int, tool_steps: int, latency: float) -> Concurrency:
    from django.db import transaction
    from django.db.models import Max
    from django.utils import timezone
    from django_q.brokers import get_broker

    from runs.models import Run, Step

    script = parallel_script(tool_steps, latency)
    paths = [write_recipe(env, f"parallel-{n:02d}", PARALLEL_RECIPE, script) for n in range(runs)]
    get_broker().purge_queue()  # (a) and (c) queued their runs too; they ran in-process
    cluster = QCluster(env, runs)
    try:
        startup = cluster.wait_ready(runs)
        time.sleep(2.0)  # let the pusher, monitor and scheduler settle
        idle_shots = []
        for _ in range(3):
            idle_shots.append(snapshot(cluster.proc.pid))
            time.sleep(0.3)
        idle = min(idle_shots, key=lambda shot: shot.rss_total)
        sampler = Sampler(cluster.proc.pid)
        sampler.start()
        marks: dict[str, object] = {}
        with transaction.atomic():
            # registered first, so it fires at commit just before the runs are enqueued
            transaction.on_commit(lambda: marks.setdefault("t0", timezone.now()))
            ids = [start_run(path).pk for path in paths]
        deadline = time.monotonic() + 60 + (tool_steps + 1) * latency * 10
        while Run.objects.filter(pk__in=ids, state="finished").count() < runs:
            if time.monotonic() > deadline:
                states = list(Run.objects.filter(pk__in=ids).values_list("state", flat=True))
                raise RuntimeError(f"runs did not finish: {states}\n{cluster.tail()}")
            if cluster.proc.poll() is not None:
                raise RuntimeError(f"qcluster died:\n{cluster.tail()}")
            time.sleep(0.1)
        sampler.stopped.set()
        sampler.join()
        finished = Run.objects.filter(pk__in=ids)
        causes = set(finished.values_list("cause", flat=True))
        assert causes == {"done"}, causes
        calls = Step.objects.filter(run_pass__run__in=ids).count()
        assert calls == runs * (tool_steps + 1), calls
        t0 = marks["t0"]
        stats = finished.aggregate(end=Max("ended_at"), last_start=Max("started_at"))
        run_walls = sorted(
            (end - start).total_seconds() for start, end in finished.values_list("started_at", "ended_at")
        )
        return Concurrency(
            runs=runs,
            calls_per_run=tool_steps + 1,
            latency=latency,
            wall=(stats["end"] - t0).total_seconds(),
            last_start=(stats["last_start"] - t0).total_seconds(),
            run_walls=run_walls,
            workers=runs,
            processes=len(sampler.peak.rss),
            idle=idle,
            peak=sampler.peak,
            peak_pss_kb=sampler.peak_pss,
            worker_pids=cluster.worker_pids(),
            startup=startup,
        )
    finally:
        cluster.stop()


# ---------------------------------------------------------------- (d) what a step writes


STORAGE_RECIPE = """\
---
loop:
  do:
    max_iterations: 400
    interval: 500
    max_duration: 1h
    budget:
      size: 1s
---
Read the page again and again, then reply with a one-line summary.
"""
TOOL_RESULT_BYTES = 20_000
STORAGE_STEPS = 300  # bytes_growth compares the bytes step 300 writes with step 10's


class TwentyKilobytePages(Tools):
    """A tools port whose one tool returns 20 KB of text every call."""

    def specs(self) -> list[dict]:
        return [
            {
                "name": "read_page",
                "description": "Read the page.",
                "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            }
        ]

    def call(self, name: str, arguments: dict):
        line = f"page {arguments.get('n')}: " + "lorem ipsum dolor sit amet " * 4 + "\n"
        return ToolResult(content=(line * (TOOL_RESULT_BYTES // len(line) + 1))[:TOOL_RESULT_BYTES])


class CountingModel:
    """Asks for read_page (a new `n` each time, so loop detection stays out of it) for `steps`
    calls, then answers. Its usage is small and fixed: what is measured is the engine's writes."""

    label = "bench (storage)"

    def __init__(self, steps: int, on_call):
        self.steps, self.on_call, self.calls = steps, on_call, 0

    def complete(self, request):
        from agents.ports import ModelReply, Usage

        self.calls += 1
        self.on_call(self.calls)
        usage = Usage(input_tokens=100, output_tokens=20)
        if self.calls > self.steps:
            return ModelReply(content=[{"type": "text", "text": "Done."}], stop_reason="end_turn", usage=usage)
        call = {"type": "tool_use", "id": f"toolu_{self.calls}", "name": "read_page", "input": {"n": self.calls}}
        return ModelReply(
            content=[{"type": "text", "text": f"Reading ({self.calls})."}, call], stop_reason="tool_use", usage=usage
        )


@dataclass
class Storage:
    steps: int
    statements: int  # from the first model call to the one after the last measured step
    written: dict[int, int]  # step -> bytes of the parameters of its INSERT and UPDATE statements
    seconds: float

    @property
    def stmts_per_step(self) -> float:
        return self.statements / self.steps

    @property
    def growth(self) -> float:
        return self.written[self.steps] / self.written[10]


def parameter_bytes(params, many: bool) -> int:
    """Bytes of a statement's parameters: text as UTF-8, numbers and dates 8 each. psycopg wraps
    JSON in a Jsonb, and a bulk insert on PostgreSQL sends an array per column."""
    if many:
        return sum(parameter_bytes(row, False) for row in params or [])
    values = params.values() if isinstance(params, dict) else params or []
    total = 0
    for value in values:
        if isinstance(value, (list, tuple)):
            total += parameter_bytes(value, False)
            continue
        value = json.dumps(value.obj) if hasattr(value, "obj") else value
        if isinstance(value, str):
            total += len(value.encode())
        elif isinstance(value, (bytes, bytearray, memoryview)):
            total += len(value)
        elif value is not None:
            total += 8
    return total


def bench_storage(env: Environment, steps: int) -> Storage:
    """One pass of `steps` tool steps (plus a final answer), each tool result 20 KB: the bytes
    each step writes (parameters of its INSERT/UPDATE statements) and its SQL statements."""
    from collections import Counter

    from django.db import connection

    from runs import worker
    from runs.wiring import arm_run

    written: Counter = Counter()
    marks: dict[int, int] = {}  # model call -> SQL statements issued before it
    model = CountingModel(steps, on_call=lambda n: marks.setdefault(n, len(connection.queries_log)))

    def measure(execute, sql, params, many, context):
        if sql.lstrip()[:6].upper() in ("INSERT", "UPDATE"):
            written[model.calls] += parameter_bytes(params, many)  # call k's step until call k+1
        return execute(sql, params, many, context)

    run = start_run(write_recipe(env, "storage", STORAGE_RECIPE))
    started = time.perf_counter()
    logged, connection.force_debug_cursor = connection.force_debug_cursor, True  # COMMITs too
    try:
        connection.queries_log.clear()
        with connection.execute_wrapper(measure):
            worker.execute(run.pk, lambda r: arm_run(r, model=model, tools=TwentyKilobytePages()))
    finally:
        connection.force_debug_cursor = logged
    seconds = time.perf_counter() - started
    assert marks[steps + 1] < connection.queries_log.maxlen, "the query log overflowed"
    run.refresh_from_db()
    assert run.cause == "done" and model.calls == steps + 1, (run.cause, model.calls)
    return Storage(steps=steps, statements=marks[steps + 1] - marks[1], written=dict(written), seconds=seconds)


# ---------------------------------------------------------------- (c) token overshoot


JOB_TOOLS = ("list_results", "save")


def random_job(rng: random.Random) -> tuple[str, list[str], int]:
    """Like test_engine_ceiling's jobs, drawn from a seeded Random, with small budgets.

    Returns the recipe, the task leg's tool calls (repeated until a ceiling stops the leg)
    and how many tool turns the wrap-up takes before it lands (0: it never lands by itself).
    """
    lines = [
        "---",
        "loop:",
        "  do:",
        f"    max_iterations: {rng.randint(1, 8)}",
        "    budget:",
        f"      size: {rng.randint(4, 60)}p",
    ]
    if rng.random() < 0.5:
        lines += [
            "      watch:",
            f"        takeover_when: {rng.randint(10, 99)}",
            "        takeover_prompt: Land it now.",
        ]
    if rng.random() < 0.5:
        lines += ["  while:", f"    max_iterations: {rng.randint(1, 3)}", "    prompts:", "      until: Five entries."]
        if rng.random() < 0.6:
            lines.append(f"    budget: {rng.randint(4, 150)}p")
    lines += ["---", "Work on the list."]
    tools = [rng.choice(JOB_TOOLS) for _ in range(rng.randint(0, 2))]
    wrap_turns = 0 if rng.random() < 0.3 else rng.randint(1, 4)
    return "\n".join(lines) + "\n", tools, wrap_turns


@dataclass
class Overshoot:
    jobs: int
    seed: int
    seconds: float
    overshoot_tokens: int = 0  # past a leg allotment, the judge bound, the outer total or the worst case
    overshoot_steps: int = 0  # task steps past the task leg's step allotment
    ledger_mismatch: int = 0  # |tokens counted on the run - ledger sum|, summed
    not_finished: int = 0
    errors: int = 0
    passes: int = 0
    calls: int = 0
    tokens: int = 0
    token_stops: int = 0  # legs stopped by the token ceiling (what the test is about)
    outer_exhausted: int = 0  # jobs ended "budget exhausted"
    min_headroom: int | None = None  # smallest allotment - spent over legs stopped on tokens
    causes: dict[str, int] = field(default_factory=dict)


def run_overshoot(run) -> tuple[int, list[dict], dict[str, int]]:
    """Tokens a finished run counted past its outer total, its worst case or any leg's allotment;
    with its spend per (pass, leg) (tokens, calls) and each leg's token allotment."""
    from django.db.models import Count, Sum

    from runs.models import Step

    plan = run.plan
    over = max(0, run.tokens_counted - plan["worst_tokens"])
    if plan["outer_tokens"]:
        over += max(0, run.tokens_counted - plan["outer_tokens"])
    caps = {
        "task": plan["split"]["task"]["tokens"],
        "wrap-up": (plan["split"]["takeover"] or {}).get("tokens", 0),
        "judging": plan["judge_tokens"],
    }
    legs = list(
        Step.objects.filter(run_pass__run=run)
        .values("run_pass__number", "leg")
        .annotate(tokens=Sum("counted_tokens"), n=Count("id"))
    )
    over += sum(max(0, row["tokens"] - caps[row["leg"]]) for row in legs)
    return over, legs, caps


def bench_overshoot(env: Environment, jobs: int, seed: int) -> Overshoot:
    from django.db.models import Sum

    from runs import worker
    from runs.models import LedgerEntry, Pass
    from runs.wiring import arm_run
    from tests.fake_model import FakeModel, tool

    rng = random.Random(seed)
    out = Overshoot(jobs=jobs, seed=seed, seconds=0.0)
    started = time.perf_counter()
    for n in range(jobs):
        text, tools, wrap_turns = random_job(rng)
        calls = [tool("save_result", filename="r.md", content="x" * 300) if t == "save" else tool(t) for t in tools]
        landing = {"text": "landing", "tools": [tool("list_results")]}
        wrap_up = [landing] * max(wrap_turns, 1) + ([{"text": "Landed."}] if wrap_turns else [])
        model = FakeModel(
            task=[{"text": "working " * 30, "tools": calls}] if calls else [{"text": "Done."}],
            wrap_up=wrap_up,
            judge=["NO\nnot yet"] * 5,
            adversarial=True,
        )
        run = start_run(write_recipe(env, f"ceiling-{n:04d}", text))
        worker.execute(run.pk, lambda r, model=model: arm_run(r, model=model))
        run.refresh_from_db()
        plan = run.plan
        out.causes[run.cause.split(":")[0]] = out.causes.get(run.cause.split(":")[0], 0) + 1
        out.not_finished += run.state != "finished"
        out.errors += run.cause.startswith("error")
        out.outer_exhausted += run.cause == "budget exhausted"
        out.tokens += run.tokens_counted
        out.calls += model.calls
        ledger = LedgerEntry.objects.filter(run=run).aggregate(s=Sum("counted_tokens"))["s"] or 0
        out.ledger_mismatch += abs(run.tokens_counted - ledger)
        overshoot, legs, caps = run_overshoot(run)
        out.overshoot_tokens += overshoot
        spent = {(row["run_pass__number"], row["leg"]): row for row in legs}
        for row in legs:
            if row["leg"] == "task":
                out.overshoot_steps += max(0, row["n"] - plan["split"]["task"]["steps"])
        for p in Pass.objects.filter(run=run).values("number", "task_stop", "wrap_up_stop"):
            out.passes += 1
            for leg, stop in (("task", p["task_stop"]), ("wrap-up", p["wrap_up_stop"])):
                if stop == "tokens":
                    out.token_stops += 1
                    used = spent.get((p["number"], leg), {}).get("tokens", 0)
                    headroom = caps[leg] - used
                    out.min_headroom = headroom if out.min_headroom is None else min(out.min_headroom, headroom)
    out.seconds = time.perf_counter() - started
    return out


# ---------------------------------------------------------------- report


def report(a: Overhead, b: Concurrency, c: Overshoot, d: Storage, total_seconds: float) -> list[str]:
    mib = lambda kb: kb / 1024  # noqa: E731
    extra = a.ms_per_call["engine"] - a.ms_per_call["bare"]
    provider_extra = a.ms_per_call["provider"] - a.ms_per_call["bare"]
    idle_workers, peak_workers = b.worker_rss_mb(b.idle), b.worker_rss_mb(b.peak)
    lines = [
        f"engine benchmark  ({os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"{'PostgreSQL' if 'DATABASE_URL' in os.environ else 'SQLite WAL'}, ORM broker; {total_seconds:.0f}s)",
        "",
        f"(a) overhead per step: {a.steps} list_results steps + a final text = {a.calls} calls, "
        f"FakeAnthropic on loopback; median of {a.repeats}",
        f"    {'driver':<46}{'ms/step':>9}{'min':>8}{'max':>8}",
    ]
    names = {
        "bare": "bare loop: SDK messages.create",
        "provider": "provider alone: AnthropicModel.complete",
        "engine": "worker.execute (AnthropicModel, DB)",
    }
    for key, label in names.items():
        low, high = a.spread[key]
        lines.append(f"    {label:<46}{a.ms_per_call[key]:9.2f}{low:8.2f}{high:8.2f}")
    lines += [
        f"    engine extra per step vs bare        {extra:8.2f} ms  "
        f"(provider transport {provider_extra:.2f} ms, engine bookkeeping "
        f"{a.ms_per_call['engine'] - a.ms_per_call['provider']:.2f} ms)",
        f"    SQL statements per step              {a.queries_per_call:8.1f}",
        f"    engine per-run cost, not per step    {a.engine_fixed_ms:8.1f} ms  (a one-call run minus "
        f"a bare call; amortised in the rows above)",
        f"    (bare loop with the fake's Nagle left on: {a.nagle_bare_ms:.2f} ms/step, a delayed-ACK "
        "stall per call; TCP_NODELAY above)",
        f"    overhead_ratio (engine / bare)       {a.ratio:8.2f}",
        "",
        f"(b) {b.runs} concurrent runs, one qcluster with RYSH_WORKERS={b.workers}, "
        f"{b.calls_per_run} calls/run at {b.latency:g}s simulated latency",
        f"    cluster start (all workers ready)    {b.startup:8.1f} s",
        f"    wall, enqueue -> last run finished   {b.wall:8.2f} s   (ideal {b.calls_per_run * b.latency:.2f} s)",
        f"    last run claimed by a worker after   {b.last_start:8.2f} s",
        f"    one run, claimed -> finished         {statistics.median(b.run_walls):8.2f} s median, "
        f"{max(b.run_walls):.2f} max",
        f"    achieved / ideal steps/s             {b.achieved_rate:8.2f} / {b.ideal_rate:.2f}",
        f"    concurrency_efficiency               {b.efficiency:8.2f}",
        f"    cluster processes                    {b.processes:8d}   ({len(b.worker_pids)} workers)",
        f"    RSS sum idle -> peak                 {mib(b.idle.rss_total):8.0f} -> {mib(b.peak.rss_total):.0f} MiB",
        f"    PSS sum idle -> peak                 {mib(b.idle.pss_total):8.0f} -> "
        f"{mib(b.peak_pss_kb):.0f} MiB   (shared pages counted once)",
        f"    RSS per worker process idle          {statistics.median(idle_workers):8.1f} MiB median",
        f"    RSS per worker process at peak       {statistics.median(peak_workers):8.1f} MiB median, "
        f"{max(peak_workers):.1f} max",
        f"    peak_mb_per_run (peak - idle) / {b.runs:<4} {b.peak_mb_per_run:8.2f} MiB",
        "",
        f"(c) token overshoot: {c.jobs} random jobs (seed {c.seed}), FakeModel(adversarial=True), {c.seconds:.0f}s",
        f"    passes / model calls / tokens        {c.passes} / {c.calls} / {c.tokens:,}",
        f"    legs stopped by a token ceiling      {c.token_stops:8d}   "
        f"(tightest headroom left: {c.min_headroom} tokens)",
        f"    jobs ended 'budget exhausted'        {c.outer_exhausted:8d}",
        "    causes                               "
        + ", ".join(f"{k} {v}" for k, v in sorted(c.causes.items(), key=lambda kv: -kv[1])),
        f"    unfinished / errors                  {c.not_finished:8d} / {c.errors}",
        f"    ledger mismatch (tokens)             {c.ledger_mismatch:8d}",
        f"    task steps past the step allotment   {c.overshoot_steps:8d}",
        f"    overshoot_tokens                     {c.overshoot_tokens:8d}",
        "",
        f"(d) what a step writes: one pass of {d.steps} steps, each tool result {TOOL_RESULT_BYTES // 1000} KB "
        f"(stub model in process; {d.seconds:.0f}s)",
        f"    SQL statements per step              {d.stmts_per_step:8.1f}   (steps 1-{d.steps}, "
        "per-run statements apart)",
        f"    bytes written by step 10             {d.written[10]:8d}",
        f"    bytes written by step {d.steps:<14d} {d.written[d.steps]:8d}",
        f"    bytes_growth (step {d.steps} / step 10)   {d.growth:8.2f}",
        "",
        f"overshoot_tokens={c.overshoot_tokens} jobs={c.jobs} overhead_ratio={a.ratio:.2f} "
        f"concurrency_efficiency={b.efficiency:.2f} peak_mb_per_run={b.peak_mb_per_run:.2f} "
        f"stmts_per_step={d.stmts_per_step:.1f} bytes_growth={d.growth:.2f}",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engine", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: fewer steps, jobs and repeats")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the random jobs of (c)")
    parser.add_argument("--jobs", type=int, help="random jobs for (c) (default 1000, quick 100)")
    parser.add_argument("--profile", action="store_true", help="cProfile one engine run of (a)")
    args = parser.parse_args(argv)
    steps, repeats = (10, 2) if args.quick else (40, 9)
    jobs = args.jobs or (100 if args.quick else 1000)
    tool_steps = 3 if args.quick else 8

    started = time.perf_counter()
    env = set_up()
    try:
        print(f"(a) overhead: {steps} steps x {repeats} repeats ...", flush=True)
        a = bench_overhead(env, steps, repeats, args.profile)
        print(f"(d) storage: one pass of {STORAGE_STEPS} steps ...", flush=True)
        d = bench_storage(env, STORAGE_STEPS)
        print(f"(c) overshoot: {jobs} random jobs ...", flush=True)
        c = bench_overshoot(env, jobs, args.seed)
        print(f"(e) sub-agents: {jobs} random delegating jobs ...", flush=True)
        e = bench_delegation(env, jobs, args.seed)
        print(f"(b) concurrency: 20 runs x {tool_steps + 1} calls on a qcluster ...", flush=True)
        b = bench_concurrency(env, 20, tool_steps, 1.0)
        print()
        lines = report(a, b, c, d, time.perf_counter() - started)
        lines[-1:-1] = [*delegation_report(e), ""]  # (e) beside (c); the last line stays as it was
        print("\n".join(lines))
    finally:
        env.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
