"""Benchmark the live dashboard: `python -m bench.live [--samples 100] [--quick]`.

Two measurements, in throwaway data folders (never .data):

- **Latency**, event committed -> the browser's DOM updated, on the embedded default (SQLite;
  each socket tails the RunEvent log every RYSH_LIVE_POLL_MS) and on Redis (channels_redis
  pushes; REDIS_URL=redis://127.0.0.1:6379/12), side by side in one run. Each side is a real
  daphne serving a run page (/runs/<id>/ of a finished demo run) to real Chromium; a
  MutationObserver records performance.timeOrigin + performance.now() when a marker appears.
  A separate writer process per side (as a worker would) sets the last pass's reason to a
  unique marker, records a RunEvent, takes time.time() just after the commit, then pushes.
  Latency = DOM time - commit time (the browser's clock is checked against Python's first).
  The bar to beat: rysh's own web UI polls a snapshot every 200 ms, i.e. ~100 ms on average
  (U(0, 200 ms)) plus the time to fetch and render a snapshot, measured here as a GET of the
  run page's live fragment.
- **Pages at scale**: server time and SQL query count of GET / and GET /history/ with 100 and
  with 10,000 finished runs in the database (bulk_create); the query count must not grow.

Exit status 1 when a query count grows with the number of runs. Nothing is asserted on time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REDIS_URL = "redis://127.0.0.1:6379/12"
WARMUP = 3  # first samples of each writer, not counted (connection set-up)

OBSERVER = """() => {
  window.__marks = {};
  const seen = () => {
    const t = performance.timeOrigin + performance.now();
    const box = document.getElementById("run-timeline");
    const m = box && box.textContent.match(/bench-\\d+-[a-z]+/);
    if (m && !(m[0] in window.__marks)) window.__marks[m[0]] = t;
  };
  new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


# -- the writer: runs in its own process with a side's environment --------------------------------


def writer(run_id: int, samples: int, tag: str, seed: int, gap: tuple[float, float]) -> int:
    import django

    django.setup()
    from runs import events
    from runs.models import Pass, RunEvent

    rng = random.Random(seed)
    last = Pass.objects.filter(run_id=run_id).order_by("-number").first()
    time.sleep(1.0)
    for i in range(samples + WARMUP):
        time.sleep(rng.uniform(*gap))  # random gaps: no lock-step with the 100 ms tail
        marker = f"bench-{i}-{tag}"
        Pass.objects.filter(pk=last.pk).update(reason=marker)
        event = RunEvent.objects.create(run_id=run_id, kind="bench", message=marker, data={})
        committed = time.time()  # autocommit: both rows are committed here
        events.push(run_id, event.pk, "bench")
        print(json.dumps({"marker": marker, "t": committed, "i": i}), flush=True)
    return 0


# -- pages at scale: runs in its own process on a throwaway database ---------------------------


def pages(counts: list[int], repeats: int) -> int:
    import django

    django.setup()
    from datetime import timedelta
    from decimal import Decimal

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from runs.models import Pass, Run

    call_command("migrate", verbosity=0)
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("bench", "b@rysh.invalid", "x"))
    plan = {
        "passes": 3,
        "worst_tokens": 24000,
        "outer_tokens": 24000,
        "split": {
            "task": {"tokens": 7200, "steps": 36, "seconds": 540},
            "takeover": {"tokens": 200000, "steps": 100, "seconds": 300},
        },
    }
    common = dict(
        kind="task",
        recipe_path="x.md",
        recipe_text="x",
        provider="anthropic",
        executor_model="claude-sonnet-4-6",
        judge_model="claude-haiku-4-5",
        output_dir="",
        plan=plan,
    )
    for n in range(3):  # a few live rows, the same in both cases
        run = Run.objects.create(
            name=f"live-{n}",
            target=f"task/live-{n}",
            state="running",
            phase="task",
            pass_number=1,
            started_at=timezone.now(),
            **common,
        )
        Pass.objects.create(run=run, number=1)
    rng = random.Random(7)
    causes = ["fulfilled", "done", "unfulfilled", "stopped by user", "budget exhausted"]
    now = timezone.now()
    made, out = 0, {}
    for count in counts:
        batch = []
        for i in range(made, count):
            ended = now - timedelta(minutes=rng.randint(1, 60 * 24 * 60))
            tokens = rng.randint(2000, 900000)
            batch.append(
                Run(
                    name=f"recipe-{i % 40}",
                    target=f"task/recipe-{i % 40}",
                    state="finished",
                    cause=rng.choice(causes),
                    pass_number=rng.randint(1, 3),
                    tokens_counted=tokens,
                    input_tokens=tokens // 2,
                    output_tokens=tokens // 4,
                    cache_read_tokens=tokens,
                    cache_write_tokens=tokens // 4,
                    cost=Decimal(tokens) / Decimal(100000),
                    started_at=ended - timedelta(seconds=rng.randint(30, 3600)),
                    ended_at=ended,
                    **common,
                )
            )
        Run.objects.bulk_create(batch, batch_size=1000)
        made = count
        for url in ("/", "/history/"):
            client.get(url, HTTP_HOST="localhost")  # warm
            times, queries = [], 0
            for _ in range(repeats):
                with CaptureQueriesContext(connection) as captured:
                    started = time.perf_counter()
                    response = client.get(url, HTTP_HOST="localhost")
                    times.append(time.perf_counter() - started)
                assert response.status_code == 200, (url, response.status_code)
                queries = len(captured)
            out[f"{url} {count}"] = {
                "ms": 1000 * statistics.median(times),
                "min_ms": 1000 * min(times),
                "queries": queries,
                "bytes": len(response.content),
            }
    print(json.dumps(out))
    return 0


# -- the driver ------------------------------------------------------------------------------------


def redis_answers(url: str) -> str:
    """'' when Redis answers PING, else why not."""
    try:
        import redis

        redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1).ping()
        return ""
    except Exception as exc:  # noqa: BLE001 - any failure means: skip that half
        return f"{type(exc).__name__}: {exc}"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


class Side:
    def __init__(self, name: str, label: str, redis_url: str = ""):
        from tests.e2e.stack import Stack

        self.name, self.label = name, label
        self.stack = Stack(redis_url=redis_url, extra_env={"LOG_LEVEL": "WARNING"})
        self.run_id = 0
        self.page = None
        self.offset = 0.0
        self.offset_err = 0.0
        self.latencies: list[float] = []
        self.missed = 0
        self.fragment_ms = 0.0

    def prepare(self) -> None:
        """Migrate, seed, serve, and finish one demo run to look at (then stop the worker)."""
        s = self.stack
        s.setup()
        s.start_web()
        s.start_worker()
        out = s.manage("auto", "task", "run", "reading-list", "latency", "--wait", timeout=180).stdout
        self.run_id = int(re.search(r"run #(\d+) finished", out).group(1))
        s.stop_process("qcluster")  # from now on the writer is the only one writing

    def open(self, browser) -> None:
        from tests.e2e.stack import login

        context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = context.new_page()
        login(self.page, self.stack.url, "demo", self.stack.logins()["demo"])
        self.page.goto(f"{self.stack.url}/runs/{self.run_id}/")
        self.page.wait_for_function("() => window.htmx !== undefined")
        self.page.wait_for_timeout(500)  # the socket's first message has been swapped in
        self.page.evaluate(OBSERVER)
        self.offset, self.offset_err = self.clock()
        self.fragment_ms = self.fetch_fragment()

    def clock(self) -> tuple[float, float]:
        """(browser wall clock - Python's, half the round trip) in seconds, best of 10."""
        best = None
        for _ in range(10):
            t0 = time.time()
            browser_now = self.page.evaluate("performance.timeOrigin + performance.now()") / 1000
            t1 = time.time()
            if best is None or t1 - t0 < best[1] * 2:
                best = (browser_now - (t0 + t1) / 2, (t1 - t0) / 2)
        return best

    def fetch_fragment(self, n: int = 20) -> float:
        """Median ms of fetching the run's live fragment (what a 200 ms poller would fetch)."""
        times = self.page.evaluate(
            """async ([url, n]) => {
            const out = [];
            for (let i = 0; i < n; i++) {
                const t = performance.now();
                const r = await fetch(url, {headers: {"HX-Request": "true"}});
                await r.text();
                out.push(performance.now() - t);
            }
            return out;
        }""",
            [f"/runs/{self.run_id}/", n],
        )
        return statistics.median(times)

    def start_writer(self, samples: int, seed: int, gap: tuple[float, float]) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.live",
                "--writer",
                str(self.run_id),
                str(samples),
                self.name,
                str(seed),
                str(gap[0]),
                str(gap[1]),
            ],
            cwd=ROOT,
            env=self.stack.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def collect(self, writer_out: str) -> None:
        marks = self.page.evaluate("window.__marks")
        for line in writer_out.splitlines():
            sample = json.loads(line)
            if sample["i"] < WARMUP:
                continue
            dom = marks.get(sample["marker"])
            if dom is None:
                self.missed += 1
                continue
            self.latencies.append((dom / 1000 - self.offset - sample["t"]) * 1000)

    def row(self) -> str:
        v = self.latencies
        return (
            f"    {self.label:<44} {percentile(v, 50):7.1f} {percentile(v, 90):7.1f} {percentile(v, 99):7.1f} "
            f"{statistics.mean(v):7.1f} {min(v):7.1f} {max(v):7.1f} {len(v):5d} {self.missed:4d}"
        )


def chromium_version(browser) -> str:
    return browser.version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.live", description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=100, help="latency samples per side (default 100)")
    parser.add_argument("--quick", action="store_true", help="20 samples, 1,000 runs instead of 10,000")
    parser.add_argument("--writer", nargs=6, help=argparse.SUPPRESS)
    parser.add_argument("--pages", nargs="+", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.writer:
        run_id, samples, tag, seed, lo, hi = options.writer
        return writer(int(run_id), int(samples), tag, int(seed), (float(lo), float(hi)))
    if options.pages:
        return pages(options.pages, repeats=15)

    from playwright.sync_api import sync_playwright

    from tests.e2e.stack import launch_chromium

    samples = 20 if options.quick else options.samples
    big = 1000 if options.quick else 10000
    started = time.monotonic()
    sides = [Side("sqlite", "embedded: SQLite + RunEvent tail (100 ms)")]
    redis_skip = redis_answers(REDIS_URL)
    if not redis_skip:
        sides.append(Side("redis", "Redis: channels_redis push", redis_url=REDIS_URL))
    try:
        print(f"setting up {len(sides)} server(s) and a demo run each ...", flush=True)
        for side in sides:
            side.prepare()
        # the pages-at-scale half in its own process and data folder, while nothing else runs
        print(f"pages with 100 and {big:,} runs ...", flush=True)
        with tempfile.TemporaryDirectory(prefix="rysh-bench-pages-") as tmp:
            env = {
                **os.environ,
                "RYSH_DATA_DIR": tmp,
                "DJANGO_SETTINGS_MODULE": "rysh_site.settings",
                "LOG_LEVEL": "WARNING",
            }
            for name in ("DATABASE_URL", "REDIS_URL"):
                env.pop(name, None)
            out = subprocess.run(
                [sys.executable, "-m", "bench.live", "--pages", "100", str(big)],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            if out.returncode != 0:
                print(out.stdout + out.stderr, file=sys.stderr)
                return 1
            scale = json.loads(out.stdout.strip().splitlines()[-1])

        print(f"latency: {samples} samples per side, side by side ...", flush=True)
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            version = chromium_version(browser)
            for side in sides:
                side.open(browser)
            writers = [side.start_writer(samples, seed=11 + n, gap=(0.25, 0.45)) for n, side in enumerate(sides)]
            outputs = []
            for proc in writers:
                stdout, stderr = proc.communicate(timeout=60 + samples * 1.0)
                if proc.returncode != 0:
                    print(stderr, file=sys.stderr)
                    return 1
                outputs.append(stdout)
            time.sleep(1.0)  # the last marker's way to the DOM
            for side, stdout in zip(sides, outputs):
                side.collect(stdout)
            browser.close()
    finally:
        for side in sides:
            side.stack.stop()

    seconds = time.monotonic() - started
    fragment = statistics.median(side.fragment_ms for side in sides)
    print()
    print(
        f"live dashboard benchmark  ({os.cpu_count()} cores, Python {platform.python_version()}, "
        f"Chromium {version}, daphne on 127.0.0.1; {seconds:.0f}s)"
    )
    print()
    print("latency, event committed in a writer process -> the browser's DOM updated (ms)")
    print(
        f"    page /runs/<id>/ of a finished demo run (2 passes, 17 steps), {samples} samples a side, "
        f"random gaps of 250-450 ms"
    )
    print(f"    {'path':<44} {'p50':>7} {'p90':>7} {'p99':>7} {'mean':>7} {'min':>7} {'max':>7} {'n':>5} {'lost':>4}")
    for side in sides:
        print(side.row())
    if redis_skip:
        print(f"    Redis: skipped — {REDIS_URL} does not answer ({redis_skip})")
    f = fragment  # a 200 ms poll waits U(0, 200 ms), then fetches a snapshot
    print(
        f"    {'bar to beat: a snapshot polled every 200 ms':<44} {100 + f:7.1f} {180 + f:7.1f} {198 + f:7.1f} "
        f"{100 + f:7.1f} {f:7.1f} {200 + f:7.1f}   (U(0, 200 ms) + {f:.1f} ms to fetch a snapshot)"
    )
    for side in sides:
        print(
            f"    ({side.name}: browser clock - Python clock {side.offset * 1000:+.2f} ms, "
            f"±{side.offset_err * 1000:.2f} ms; live fragment GET {side.fragment_ms:.1f} ms median)"
        )
    print()
    print("pages at scale: Django test client, server time (median of 15) and SQL queries per request")
    print(f"    {'page':<16} {'100 runs':>22} {f'{big:,} runs':>22}")
    failures = []
    for url in ("/", "/history/"):
        small, large = scale[f"{url} 100"], scale[f"{url} {big}"]
        print(
            f"    GET {url:<12} {small['ms']:9.1f} ms {small['queries']:4d} queries "
            f"{large['ms']:9.1f} ms {large['queries']:4d} queries"
        )
        if large["queries"] != small["queries"]:
            failures.append(f"GET {url}: the query count grew with the runs: {small['queries']} -> {large['queries']}")
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print("ok: the query counts do not grow with the number of runs")
    live = sides[0].latencies
    redis = sides[1].latencies if len(sides) > 1 else None

    def fmt(values, q):
        return f"{percentile(values, q):.1f}" if values else "skipped"

    print(
        f"live_p50_ms={percentile(live, 50):.1f} live_p99_ms={percentile(live, 99):.1f} "
        f"redis_p50_ms={fmt(redis, 50)} redis_p99_ms={fmt(redis, 99)} "
        f"home_queries_100={scale['/ 100']['queries']} home_queries_{big}={scale[f'/ {big}']['queries']} "
        f"history_queries_100={scale['/history/ 100']['queries']} "
        f"history_queries_{big}={scale[f'/history/ {big}']['queries']}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
