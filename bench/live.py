"""Benchmark the live dashboard: `python -m bench.live [--samples 100] [--quick]`.

Two measurements, in throwaway data folders (never .data):

- **Latency**, event committed -> the browser's DOM updated, on the embedded default (SQLite;
  the writer wakes the web process's live hub, which reads the RunEvent log) and on Redis (channels_redis
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
- **Open dashboards at team scale**, on the embedded side (daphne + a qcluster, as `make run`):
  daphne's CPU (utime + stime from /proc/<pid>/stat) over IDLE_SECONDS with 0, 10 and 100 idle
  logged-in sockets (a watcher process of raw websocket clients: the home page, the nav count, the
  approvals inbox and a run page, as a viewer and as an operator), then the wall time of 4 demo
  runs (first queued -> last finished, from the database) with none and with 100 sockets
  watching, in the order 100, 0, 0, 100 so that a drift cancels.

Exit status 1 when a query count grows with the number of runs. Nothing is asserted on time.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import http.cookiejar
import json
import os
import platform
import random
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import HTTPCookieProcessor, Request, build_opener

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REDIS_URL = "redis://127.0.0.1:6379/12"
METRICS_TOKEN = "bench-live-metrics"  # each side serves /metrics: the push latency as the server sees it
WARMUP = 3  # first samples of each writer, not counted (connection set-up)
IDLE_SECONDS = 20  # each idle CPU window
RUNS = 4  # demo runs per batch: copies of the demo's reading-list (one active run per recipe)
DEMO_TASKS = ROOT / "demo" / "recipes" / ".rysh" / "automations" / "tasks"

OBSERVER = """() => {
  window.__marks = {};
  const seen = () => {
    const t = performance.timeOrigin + performance.now();
    const box = document.getElementById("run-timeline");
    const m = box && box.textContent.match(/bench-\\d+-[a-z]+/);
    if (m && !(m[0] in window.__marks)) window.__marks[m[0]] = t;
  };
  new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true});
  window.__arrived = {};
  document.body.addEventListener("htmx:wsBeforeMessage", (e) => {
    const t = performance.timeOrigin + performance.now();
    const m = String(e.detail.message).match(/bench-\\d+-[a-z]+/);
    if (m && !(m[0] in window.__arrived)) window.__arrived[m[0]] = t;
  });
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
        time.sleep(rng.uniform(*gap))  # random gaps: no lock-step with the tail
        marker = f"bench-{i}-{tag}"
        Pass.objects.filter(pk=last.pk).update(reason=marker)
        # a verdict's event: what writes a pass's reason (its page renders the sections a verdict touches)
        event = RunEvent.objects.create(run_id=run_id, kind="verdict", message=marker, data={})
        committed = time.time()  # autocommit: both rows are committed here
        events.push(run_id, event.pk, "verdict")
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


# -- open dashboards at team scale ------------------------------------------------------------------


def runs_batch(count: int, tag: str) -> int:
    """Queue `count` demo runs (bench-1 ... copies of reading-list) back to back, wait for all;
    print the span the database saw."""
    import django

    django.setup()
    from runs import services
    from runs.models import Run, RunState

    ids = [services.run_start(kind="task", name_or_path=f"bench-{n + 1}", args=[tag]).pk for n in range(count)]
    while Run.objects.filter(pk__in=ids).exclude(state=RunState.FINISHED).exists():
        time.sleep(0.1)
    runs = list(Run.objects.filter(pk__in=ids))
    span = max(r.ended_at for r in runs) - min(r.created_at for r in runs)
    print(json.dumps({"seconds": span.total_seconds(), "causes": sorted({r.cause for r in runs})}))
    return 0


async def _ws_open(port: int, path: str, cookie: str, origin: str):
    """A websocket handshake by hand: the venv has no websocket client library for asyncio."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n"
            f"Cookie: sessionid={cookie}\r\n\r\n"
        ).encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"{path}: no upgrade: {head[:80]!r}")
    return reader, writer


def _masked(opcode: int, payload: bytes) -> bytes:
    """A client frame (clients must mask), for the pongs daphne's pings ask for."""
    mask = os.urandom(4)
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def _ws_read(reader, writer, stats: dict, first: asyncio.Event) -> None:
    while True:
        head = await reader.readexactly(2)
        opcode, size = head[0] & 0x0F, head[1] & 0x7F
        if size == 126:
            size = struct.unpack("!H", await reader.readexactly(2))[0]
        elif size == 127:
            size = struct.unpack("!Q", await reader.readexactly(8))[0]
        payload = await reader.readexactly(size)  # a server's frames are not masked
        if opcode == 0x9:
            writer.write(_masked(0xA, payload))
        elif opcode == 0x8:
            return
        elif opcode in (0x0, 0x1, 0x2):
            stats["messages"] += 1
            stats["bytes"] += size
            first.set()


def watchers(port: int, origin: str) -> int:
    """Hold websockets open on command (stdin lines): `open N` opens N more, cycling through the
    targets given on the first line as JSON [[path, session cookie], ...], and prints `ready N`
    once each has its first message; `count` prints the messages received; `close` ends."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        targets = json.loads(await loop.run_in_executor(None, sys.stdin.readline))
        stats, sockets, readers = {"messages": 0, "bytes": 0}, [], []
        while True:
            command = (await loop.run_in_executor(None, sys.stdin.readline)).split()
            if not command or command[0] == "close":
                break
            if command[0] == "open":
                firsts = []
                for _ in range(int(command[1])):
                    path, cookie = targets[len(sockets) % len(targets)]
                    reader, writer = await _ws_open(port, path, cookie, origin)
                    firsts.append(asyncio.Event())
                    readers.append(asyncio.ensure_future(_ws_read(reader, writer, stats, firsts[-1])))
                    sockets.append(writer)
                await asyncio.wait_for(asyncio.gather(*(f.wait() for f in firsts)), timeout=120)
                print(f"ready {len(sockets)}", flush=True)
            elif command[0] == "count":
                print(f"count {stats['messages']} {stats['bytes']}", flush=True)
        for writer in sockets:
            writer.close()
        for task in readers:
            task.cancel()

    asyncio.run(main())
    return 0


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def session_cookie(url: str, username: str, password: str) -> str:
    """Log in through the login form, as a browser does; the session cookie's value."""
    jar = http.cookiejar.CookieJar()
    opener = build_opener(HTTPCookieProcessor(jar))
    page = opener.open(f"{url}/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token, "next": "/"})
    opener.open(Request(f"{url}/login/", data=form.encode(), headers={"Origin": url, "Referer": f"{url}/login/"}))
    return next(c.value for c in jar if c.name == "sessionid")


class Crowd:
    """The watcher process: open dashboards held by raw websocket clients."""

    def __init__(self, side: Side):
        s = side.stack
        logins = s.logins()
        cookies = [session_cookie(s.url, name, logins[name]) for name in ("viewer", "operator")]
        paths = ["/ws/live/", "/ws/live/", "/ws/nav/", "/ws/approvals/", f"/ws/runs/{side.run_id}/"]
        targets = [[path, cookie] for path in paths for cookie in cookies]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.live", "--watchers", str(s.port), s.url],
            cwd=ROOT,
            env=s.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.open_count = 0
        self._say(json.dumps(targets))

    def _say(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def open(self, n: int) -> None:
        self._say(f"open {n}")
        answer = self.proc.stdout.readline().split()
        if answer[:1] != ["ready"]:
            raise RuntimeError(f"the watchers did not open {n} sockets: {answer}")
        self.open_count = int(answer[1])

    def count(self) -> tuple[int, int]:
        self._say("count")
        _, messages, size = self.proc.stdout.readline().split()
        return int(messages), int(size)

    def close(self) -> None:
        if self.proc.poll() is None:
            self._say("close")
            self.proc.wait(timeout=30)


def idle_cpu(pid: int, seconds: float) -> float:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - before


def run_batch(side: Side, tag: str) -> float:
    out = subprocess.run(
        [sys.executable, "-m", "bench.live", "--runs", str(RUNS), tag],
        cwd=ROOT,
        env=side.stack.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stdout + out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def team_scale(side: Side, idle_seconds: float) -> dict:
    """Idle CPU with 0, 10 and 100 sockets; 4 runs with 100 watching and none (100, 0, 0, 100)."""
    s = side.stack
    recipe, script = (DEMO_TASKS / "reading-list.md").read_text(), (DEMO_TASKS / "reading-list.script.yaml").read_text()
    copies = {}
    for n in range(1, RUNS + 1):
        copies[f".rysh/automations/tasks/bench-{n}.md"] = recipe
        copies[f".rysh/automations/tasks/bench-{n}.script.yaml"] = script
    s.add_recipes(copies, "bench: copies of the demo task")
    s.start_worker()
    time.sleep(3.0)  # the worker has settled
    pid = s.procs["daphne"].pid
    out = {"cpu": {0: idle_cpu(pid, idle_seconds)}, "with": [], "without": []}
    crowd = Crowd(side)
    try:
        for total in (10, 100):
            crowd.open(total - crowd.open_count)
            time.sleep(1.0)  # every first message is sent; nothing more is coming
            out["cpu"][total] = idle_cpu(pid, idle_seconds)
        before = crowd.count()
        out["with"].append(run_batch(side, "watched-a"))
        after = crowd.count()
        out["pushed"] = (after[0] - before[0], after[1] - before[1])
        crowd.close()
        out["without"].append(run_batch(side, "alone-a"))
        out["without"].append(run_batch(side, "alone-b"))
        crowd = Crowd(side)
        crowd.open(100)
        out["with"].append(run_batch(side, "watched-b"))
    finally:
        crowd.close()
    return out


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
        self.stack = Stack(
            redis_url=redis_url,
            extra_env={"LOG_LEVEL": "WARNING", "RYSH_METRICS": "true", "RYSH_METRICS_TOKEN": METRICS_TOKEN},
        )
        self.run_id = 0
        self.page = None
        self.offset = 0.0
        self.offset_err = 0.0
        self.latencies: list[float] = []
        self.arrivals: list[float] = []  # event committed -> the websocket message arrives
        self.swaps: list[float] = []  # the message arrives -> the DOM updated (htmx's swap)
        self.missed = 0
        self.fragment_ms = 0.0
        self.metric = ""

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
        arrived = self.page.evaluate("window.__arrived")
        for line in writer_out.splitlines():
            sample = json.loads(line)
            if sample["i"] < WARMUP:
                continue
            dom = marks.get(sample["marker"])
            if dom is None:
                self.missed += 1
                continue
            self.latencies.append((dom / 1000 - self.offset - sample["t"]) * 1000)
            came = arrived.get(sample["marker"])
            if came is not None:
                self.arrivals.append((came / 1000 - self.offset - sample["t"]) * 1000)
                self.swaps.append(dom - came)

    def row(self) -> str:
        return self._row(self.label, self.latencies, self.missed)

    def pushed(self) -> str:
        """The server's own figure: rysh_live_push_seconds from /metrics (event written -> the new
        HTML handed to the sockets), its quantiles interpolated in the histogram's buckets."""
        from prometheus_client.parser import text_string_to_metric_families

        request = Request(f"{self.stack.url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        text = build_opener().open(request, timeout=10).read().decode()
        buckets: dict[float, float] = {}
        for family in text_string_to_metric_families(text):
            if family.name == "rysh_live_push_seconds":
                for sample in family.samples:
                    if sample.name.endswith("_bucket"):
                        bound = float(sample.labels["le"])
                        buckets[bound] = buckets.get(bound, 0.0) + sample.value
        bounds = sorted(buckets)
        total = buckets.get(float("inf"), 0.0)
        if not total:
            return f"    {'  by the metric: written -> sent to sockets':<44} (no samples)"

        def quantile(q: float) -> float:
            rank, lower, below = q * total, 0.0, 0.0
            for bound in bounds:
                if buckets[bound] >= rank:
                    if bound == float("inf"):
                        return lower * 1000
                    share = (rank - below) / max(buckets[bound] - below, 1e-9)
                    return (lower + (bound - lower) * share) * 1000
                lower, below = bound, buckets[bound]
            return lower * 1000

        return (
            f"    {'  by the metric: written -> sent to sockets':<44} {quantile(0.5):7.1f} {quantile(0.9):7.1f} "
            f"{quantile(0.99):7.1f}   (rysh_live_push_seconds, {int(total)} pushes, interpolated in its buckets)"
        )

    def parts(self) -> str:
        """Where the time goes: the server's part and the browser's (htmx's swap)."""
        return "\n".join(
            (
                self._row("  of which: committed -> message arrives", self.arrivals),
                self._row("  of which: message arrives -> DOM updated", self.swaps),
            )
        )

    @staticmethod
    def _row(label: str, v: list[float], missed: int | None = None) -> str:
        if not v:
            return f"    {label:<44} (no samples)"
        lost = "" if missed is None else f" {missed:4d}"
        return (
            f"    {label:<44} {percentile(v, 50):7.1f} {percentile(v, 90):7.1f} {percentile(v, 99):7.1f} "
            f"{statistics.mean(v):7.1f} {min(v):7.1f} {max(v):7.1f} {len(v):5d}{lost}"
        )


def pages_at_scale(big: int) -> dict | None:
    """GET / and /history/ with 100 and `big` runs, in a process and data folder of their own."""
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
            return None
        return json.loads(out.stdout.strip().splitlines()[-1])


def chromium_version(browser) -> str:
    return browser.version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.live", description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=100, help="latency samples per side (default 100)")
    parser.add_argument("--quick", action="store_true", help="20 samples, 1,000 runs instead of 10,000")
    parser.add_argument(
        "--latency-only", action="store_true", help="measure the latency only (no pages at scale, no open dashboards)"
    )
    parser.add_argument(
        "--apart", action="store_true", help="measure the sides' latency one after the other, not at the same time"
    )
    parser.add_argument("--writer", nargs=6, help=argparse.SUPPRESS)
    parser.add_argument("--pages", nargs="+", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--runs", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--watchers", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.runs:
        return runs_batch(int(options.runs[0]), options.runs[1])
    if options.watchers:
        return watchers(int(options.watchers[0]), options.watchers[1])
    if options.writer:
        run_id, samples, tag, seed, lo, hi = options.writer
        return writer(int(run_id), int(samples), tag, int(seed), (float(lo), float(hi)))
    if options.pages:
        return pages(options.pages, repeats=15)

    from playwright.sync_api import sync_playwright

    from tests.e2e.stack import launch_chromium

    samples = 20 if options.quick else options.samples
    idle_seconds = 5 if options.quick else IDLE_SECONDS
    big = 1000 if options.quick else 10000
    started = time.monotonic()
    tick = os.environ.get("RYSH_LIVE_POLL_MS", "1000")  # the servers inherit it; the safety net's 1 s unless set
    sides = [Side("sqlite", f"embedded: SQLite, woken tail ({tick} ms net)")]
    redis_skip = redis_answers(REDIS_URL)
    if not redis_skip:
        sides.append(Side("redis", "Redis: channels_redis push", redis_url=REDIS_URL))
    try:
        print(f"setting up {len(sides)} server(s) and a demo run each ...", flush=True)
        for side in sides:
            side.prepare()
        # the pages-at-scale half in its own process and data folder, while nothing else runs
        scale = None if options.latency_only else pages_at_scale(big)
        if scale is None and not options.latency_only:
            return 1
        print(f"latency: {samples} samples per side, side by side ...", flush=True)
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            version = chromium_version(browser)
            for side in sides:
                side.open(browser)
            # together: both writers at once (each side's figures carry the other's load); apart:
            # one side's writer after the other's (each side measured on an otherwise quiet machine)
            batches = [list(enumerate(sides))] if not options.apart else [[pair] for pair in enumerate(sides)]
            outputs = []
            for batch in batches:
                writers = [side.start_writer(samples, seed=11 + n, gap=(0.25, 0.45)) for n, side in batch]
                for proc in writers:
                    stdout, stderr = proc.communicate(timeout=60 + samples * 1.0)
                    if proc.returncode != 0:
                        print(stderr, file=sys.stderr)
                        return 1
                    outputs.append(stdout)
            time.sleep(1.0)  # the last marker's way to the DOM
            for side, stdout in zip(sides, outputs):
                side.collect(stdout)
                side.metric = side.pushed()
            browser.close()
        team = None
        if not options.latency_only:
            print(
                f"open dashboards: idle CPU with 0, 10, 100 sockets ({idle_seconds}s each), {RUNS} runs x 4 ...",
                flush=True,
            )
            team = team_scale(sides[0], idle_seconds)
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
        f"random gaps of 250-450 ms, {'one side after the other' if options.apart else 'both sides at once'}"
    )
    print(f"    {'path':<44} {'p50':>7} {'p90':>7} {'p99':>7} {'mean':>7} {'min':>7} {'max':>7} {'n':>5} {'lost':>4}")
    for side in sides:
        print(side.row())
        print(side.parts())
        print(side.metric)
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
    failures = []
    if scale is not None and team is not None:
        print()
        print("pages at scale: Django test client, server time (median of 15) and SQL queries per request")
        print(f"    {'page':<16} {'100 runs':>22} {f'{big:,} runs':>22}")
        for url in ("/", "/history/"):
            small, large = scale[f"{url} 100"], scale[f"{url} {big}"]
            print(
                f"    GET {url:<12} {small['ms']:9.1f} ms {small['queries']:4d} queries "
                f"{large['ms']:9.1f} ms {large['queries']:4d} queries"
            )
            if large["queries"] != small["queries"]:
                failures.append(
                    f"GET {url}: the query count grew with the runs: {small['queries']} -> {large['queries']}"
                )
        for failure in failures:
            print(f"FAIL: {failure}")
        if not failures:
            print("ok: the query counts do not grow with the number of runs")
        cpu = team["cpu"]
        watched, alone = statistics.mean(team["with"]), statistics.mean(team["without"])
        slowdown = watched / alone
        print()
        print("open dashboards, embedded side (daphne + a qcluster with 2 workers, as `make run`)")
        print(f"    daphne CPU over {idle_seconds}s with nothing running (utime + stime; the fraction of one core)")
        for n, used in cpu.items():
            print(f"    {n:4d} idle logged-in sockets {used:7.2f} s  {used / idle_seconds:6.3f}")
        print(f"    {RUNS} demo runs, first queued -> last finished (two batches each, in the order 100, 0, 0, 100)")
        print(f"    {'none watching':<26} {alone:7.2f} s  ({', '.join(f'{t:.2f}' for t in team['without'])})")
        print(
            f"    {'100 sockets watching':<26} {watched:7.2f} s  ({', '.join(f'{t:.2f}' for t in team['with'])}); "
            f"x{slowdown:.3f}; the 100 sockets were sent {team['pushed'][0]} messages, "
            f"{team['pushed'][1] / 1e6:.1f} MB in their first batch"
        )
    live = sides[0].latencies
    redis = sides[1].latencies if len(sides) > 1 else None

    def fmt(values, q):
        return f"{percentile(values, q):.1f}" if values else "skipped"

    figures = (
        f"live_p50_ms={percentile(live, 50):.1f} live_p99_ms={percentile(live, 99):.1f} "
        f"redis_p50_ms={fmt(redis, 50)} redis_p99_ms={fmt(redis, 99)}"
    )
    if scale is not None and team is not None:
        figures += (
            f" home_queries_100={scale['/ 100']['queries']} home_queries_{big}={scale[f'/ {big}']['queries']} "
            f"history_queries_100={scale['/history/ 100']['queries']} "
            f"history_queries_{big}={scale[f'/history/ {big}']['queries']} "
            f"idle_cpu_100={cpu[100] / idle_seconds:.3f} slowdown_100={slowdown:.3f}"
        )
    print(figures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
