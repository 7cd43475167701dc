"""/metrics (docs: Metrics): off by default, behind a token and/or an allow-list, the database's
figures in a fixed number of queries, the processes' figures summed across processes, and a demo
run's figures exactly as its rows say, scraped over real HTTP from daphne while a real qcluster
ran the run."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.brokers.orm import ORM
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agents.anthropic_model import AnthropicModel
from agents.ports import ModelError, ModelRequest
from notify.models import Channel, Delivery
from ops import metrics as figures
from ops.retention import retention_prune
from runs import events
from runs.models import LedgerEntry, Pass, Run, RunEvent, RunState, Step, WorkerBeat
from rysh_site import metrics
from spend.models import Quota
from tests.e2e.stack import ROOT, Stack, free_port, wait_for_port
from tests.fakes.anthropic_server import FakeAnthropic
from tests.ops.factory import make_runs
from tests.runs.test_consumers import ORIGIN, connect, session_cookie
from tests.runs.test_consumers import make_run as consumer_run

TOKEN = "scrape-me-4f1c"


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of an exposition: {(name, labels): value}."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict, name: str, **labels) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    return sum(v for (n, ls), v in found.items() if n == name and set(labels.items()) <= ls)


def make_run(target: str, *, state: str = RunState.FINISHED, pause_reason: str = "") -> Run:
    kind, name = target.split("/", 1)
    return Run.objects.create(
        kind=kind,
        name=name,
        target=target,
        recipe_path=f"{name}.md",
        recipe_text="",
        provider="anthropic",
        executor_model="claude-sonnet-4-5",
        judge_model="claude-haiku-4-5",
        output_dir="/tmp/out",
        state=state,
        pause_reason=pause_reason,
    )


def spend(run: Run, model: str, *, tokens: int, cost: str | None) -> None:
    LedgerEntry.objects.create(
        run=run,
        pass_number=1,
        purpose="task",
        model=model,
        input_tokens=tokens,
        output_tokens=tokens // 2,
        cache_read_tokens=tokens // 4,
        cache_write_tokens=tokens // 8,
        counted_tokens=tokens + tokens // 2 + tokens // 8,
        cost=None if cost is None else Decimal(cost),
    )


# -- who may scrape --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_is_not_there_when_off(client):
    assert client.get("/metrics").status_code == 404


@pytest.mark.django_db
def test_it_wants_the_bearer_token(client, settings):
    settings.RYSH_METRICS, settings.RYSH_METRICS_TOKEN = True, TOKEN
    missing = client.get("/metrics")
    assert missing.status_code == 401 and missing.content == b""
    assert missing["WWW-Authenticate"] == "Bearer"
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/metrics", headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer é"}).status_code == 401  # no error
    answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    assert answer["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert re.search(r"^rysh_queue_depth \d+\.0$", answer.content.decode(), re.M)


@pytest.mark.django_db
def test_it_wants_an_allowed_address(client, settings):
    settings.RYSH_METRICS, settings.RYSH_METRICS_ALLOW = True, [ipaddress.ip_network("10.0.0.0/8")]
    refused = client.get("/metrics")  # the test client comes from 127.0.0.1
    assert refused.status_code == 403 and refused.content == b""
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    settings.RYSH_METRICS_TOKEN = TOKEN  # both set: both are needed
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 401
    assert (
        client.get("/metrics", REMOTE_ADDR="127.0.0.1", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 403
    )
    ok = client.get("/metrics", REMOTE_ADDR="10.1.2.3", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200


def _start(env: dict) -> subprocess.CompletedProcess:
    code = "import django, os; django.setup(); print(os.environ['PROMETHEUS_MULTIPROC_DIR'])"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_turned_on_without_a_token_or_an_allow_list_it_refuses_to_start(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "rysh_site.settings", "RYSH_DATA_DIR": str(tmp_path / "data")}
    for name in ("RYSH_METRICS_TOKEN", "RYSH_METRICS_ALLOW", "RYSH_METRICS_DIR", "PROMETHEUS_MULTIPROC_DIR"):
        env.pop(name, None)
    refused = _start({**env, "RYSH_METRICS": "true"})
    assert refused.returncode != 0
    assert refused.stderr.startswith("rysh: RYSH_METRICS=true needs RYSH_METRICS_TOKEN")  # one line, no traceback
    assert "RYSH_METRICS_TOKEN" in refused.stderr and "RYSH_METRICS_ALLOW" in refused.stderr

    started = _start({**env, "RYSH_METRICS": "true", "RYSH_METRICS_ALLOW": "10.0.0.5"})
    assert started.returncode == 0, started.stderr
    shared = Path(started.stdout.strip())
    assert shared == (tmp_path / "data" / "metrics").resolve() and shared.is_dir()
    assert oct(shared.stat().st_mode & 0o777) == "0o700"


# -- the database's figures ----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_database_figures(settings):
    notes, shop = make_run("task/notes"), make_run("web/shop", state=RunState.PAUSED, pause_reason="worker lost")
    make_run("task/notes", state=RunState.PAUSED, pause_reason="quota: recipe")
    Pass.objects.create(run=notes, number=1, verdict="NO")
    Pass.objects.create(run=notes, number=2, verdict="YES")
    Pass.objects.create(run=shop, number=1)
    spend(notes, "claude-sonnet-4-5", tokens=1000, cost="0.50")
    spend(notes, "claude-sonnet-4-5", tokens=200, cost="0.25")
    spend(notes, "claude-haiku-4-5", tokens=80, cost=None)
    Quota.objects.create(scope="installation", window="day", tokens=1_000_000, micros=20_000_000)
    WorkerBeat.objects.create(cluster="c1", seen=timezone.now())
    channel = Channel.objects.create(name="ops", kind="webhook", url="https://hooks.invalid/x")
    Delivery.objects.create(channel=channel, event="run_finished", state="sent")
    Delivery.objects.create(channel=channel, event="run_finished", state="failed")

    queue = figures.broker()
    if isinstance(queue, ORM):  # the default: a task nobody runs (the test's transaction drops it)
        queue.enqueue("a task nobody runs")
    queued = queue.queue_size()  # on the scale-out run Redis may also hold other tests' tasks

    found = samples(figures.exposition()[0].decode())

    assert value(found, "rysh_queue_depth") == queued
    assert queued == 1 or not isinstance(queue, ORM)
    assert value(found, "rysh_runs", recipe="task/notes", state="finished", pause_reason="") == 1
    assert value(found, "rysh_runs", recipe="task/notes", state="paused", pause_reason="quota: recipe") == 1
    assert value(found, "rysh_runs", recipe="web/shop", state="paused", pause_reason="worker lost") == 1
    assert value(found, "rysh_passes_total", recipe="task/notes", verdict="NO") == 1
    assert value(found, "rysh_passes_total", recipe="task/notes", verdict="YES") == 1
    assert value(found, "rysh_passes_total", recipe="web/shop", verdict="none") == 1
    sonnet = {"recipe": "task/notes", "model": "claude-sonnet-4-5"}
    assert value(found, "rysh_tokens_total", **sonnet, kind="input") == 1200
    assert value(found, "rysh_tokens_total", **sonnet, kind="output") == 600
    assert value(found, "rysh_tokens_total", **sonnet, kind="cache_read") == 300
    assert value(found, "rysh_tokens_total", **sonnet, kind="cache_write") == 150
    assert value(found, "rysh_tokens_counted_total", **sonnet) == 1200 + 600 + 150
    assert value(found, "rysh_cost_dollars_total", **sonnet) == pytest.approx(0.75)
    assert value(found, "rysh_cost_dollars_total", recipe="task/notes", model="claude-haiku-4-5") == 0
    assert value(found, "rysh_model_calls_total", **sonnet) == 2
    installation = {"scope": "installation", "subject": "", "window": "day"}
    assert value(found, "rysh_quota_limit", **installation, unit="tokens") == 1_000_000
    assert value(found, "rysh_quota_limit", **installation, unit="dollars") == pytest.approx(20)
    # the window's recount of the ledger, as the Quotas page shows it: every call of today
    assert value(found, "rysh_quota_used", **installation, unit="tokens") == 1950 + 80 + 40 + 10
    assert value(found, "rysh_quota_used", **installation, unit="dollars") == pytest.approx(0.75)
    assert value(found, "rysh_quota_reserved", **installation, unit="tokens") == 0
    assert value(found, "rysh_worker_clusters") == 1
    assert value(found, "rysh_deliveries", channel_kind="webhook", state="sent") == 1
    assert value(found, "rysh_deliveries", channel_kind="webhook", state="failed") == 1


@pytest.mark.django_db
def test_a_scrape_asks_as_many_queries_for_one_run_as_for_forty():
    Quota.objects.create(scope="installation", window="day", tokens=1_000_000)

    def queries() -> int:
        figures.exposition()  # the quota's window rolled over on the first scrape
        with CaptureQueriesContext(connection) as asked:
            figures.exposition()
        return len(asked)

    spend(make_run("task/notes"), "claude-sonnet-4-5", tokens=10, cost="0.01")
    few = queries()
    for i in range(40):
        run = make_run(f"task/notes-{i % 4}")
        Pass.objects.create(run=run, number=1, verdict="YES")
        spend(run, "claude-sonnet-4-5", tokens=10, cost="0.01")
    assert queries() == few
    assert few <= 11  # a query per family or two (the eval suites' three: tests/ops/test_metrics_evals.py)


# -- the processes' figures ----------------------------------------------------------------------


def test_label_values_are_bounded():
    assert metrics.bounded("test-model", "claude-sonnet-4-5") == "claude-sonnet-4-5"
    assert metrics.bounded("test-model", "Write a list of the three best") == "other"  # a sentence
    assert metrics.bounded("test-model", "") == "other"
    for i in range(metrics.MAX_VALUES):
        metrics.bounded("test-tool", f"tool_{i}")
    assert metrics.bounded("test-tool", "tool_0") == "tool_0"  # one it already has
    assert metrics.bounded("test-tool", "one_too_many") == "other"
    assert metrics.leg_of("judging") == "judge" and metrics.leg_of("anything") == "other"


def test_with_metrics_off_observing_counts_nothing(settings, monkeypatch):
    """Off (RYSH_METRICS unset, no shared directory): every observation returns at once; on, the
    same observations count."""
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)

    def observe() -> None:
        with metrics.model_call("claude-off-1", "task"):
            pass
        metrics.model_retry("claude-off-1", "task")
        with metrics.tool_call("off_tool"):
            pass
        metrics.push_sent((time.time(), "tail"))

    def counted() -> tuple[float, ...]:
        found = samples(figures_text())
        return (
            value(found, "rysh_model_call_seconds_count", model="claude-off-1"),
            value(found, "rysh_model_call_retries_total", model="claude-off-1"),
            value(found, "rysh_tool_call_seconds_count", tool="off_tool"),
            value(found, "rysh_live_push_seconds_count", path="tail"),
        )

    settings.RYSH_METRICS = False
    assert not metrics.enabled()
    before = counted()
    observe()
    assert counted() == before
    settings.RYSH_METRICS = True
    assert metrics.enabled()
    observe()
    assert counted() == tuple(n + 1 for n in before)


OBSERVE = """
import sys
from rysh_site import metrics
for _ in range(int(sys.argv[1])):
    with metrics.model_call("claude-sonnet-4-5", "task"):
        pass
metrics.model_retry("claude-sonnet-4-5", "task")
with metrics.tool_call("save_result"):
    pass
"""


@pytest.mark.django_db
def test_the_processes_figures_are_summed_from_the_shared_directory(tmp_path, monkeypatch):
    """Two other processes observe into one directory (as two django-q2 workers do); the scrape
    sums them. Their files stay when they exit: a counter does not go back when a worker dies."""
    shared = tmp_path / "metrics"
    shared.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(shared)}
    for calls in (3, 4):
        subprocess.run([sys.executable, "-c", OBSERVE, str(calls)], cwd=ROOT, env=env, check=True, timeout=60)
    assert len(list(shared.glob("histogram_*.db"))) == 2  # one file per process

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(shared))
    found = samples(figures.exposition()[0].decode())
    task = {"model": "claude-sonnet-4-5", "leg": "task"}
    assert value(found, "rysh_model_call_seconds_count", **task, outcome="ok") == 7
    assert value(found, "rysh_model_call_seconds_bucket", **task, outcome="ok", le="+Inf") == 7
    assert value(found, "rysh_model_call_retries_total", **task) == 2
    assert value(found, "rysh_tool_call_seconds_count", tool="save_result") == 2


# -- a demo run, end to end ------------------------------------------------------------------------

RECIPE = """\
---
description: metrics - one pass, one tool call, judged NO
loop:
  do:
    budget: 20p
  while:
    max_iterations: 1
    prompts:
      until: the list has two entries
---
Write a list of secret-ish words.
"""

SCRIPT = """\
passes:
  - task:
      - text: "Saving one entry."
        tool_calls:
          - {name: save_result, input: {filename: list.md, content: "- pineapple-argument"}}
      - text: "Saved."
    judge: "NO\\nonly one entry"
"""


def _scrape(port: int, token: str | None = TOKEN) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_a_demo_run_s_figures_scraped_from_daphne_while_a_real_worker_ran_it():
    stack = Stack(workers=1, extra_env={"RYSH_METRICS": "true", "RYSH_METRICS_TOKEN": TOKEN})
    try:
        stack.setup()
        stack.add_recipes(
            {".rysh/automations/tasks/m-list.md": RECIPE, ".rysh/automations/tasks/m-list.script.yaml": SCRIPT}
        )
        stack.start_web()
        assert _scrape(stack.port, token=None)[0] == 401
        assert _scrape(stack.port, token="nope")[0] == 401
        stack.start_worker()
        pk = stack.run("m-list")
        stack.wait_run(pk, lambda row: row["state"] not in ("queued", "running"), timeout=60)
        run = stack.query(f"""
            from runs.models import LedgerEntry, Run
            r = Run.objects.get(pk={pk})
            calls = {{leg: LedgerEntry.objects.filter(run=r, purpose=leg).count() for leg in ("task", "judging")}}
            print(json.dumps({{"state": r.state, "pause_reason": r.pause_reason, "model": r.executor_model,
                               "input": r.input_tokens, "output": r.output_tokens, "cache_read": r.cache_read_tokens,
                               "cache_write": r.cache_write_tokens, "cost": float(r.cost or 0), "calls": calls}}))""")
        status, text = _scrape(stack.port)
        assert status == 200, text
        found = samples(text)

        recipe = {"recipe": "task/m-list"}
        assert value(found, "rysh_runs", **recipe, state=run["state"], pause_reason=run["pause_reason"]) == 1
        assert value(found, "rysh_passes_total", **recipe, verdict="NO") == 1
        for kind in ("input", "output", "cache_read", "cache_write"):
            assert value(found, "rysh_tokens_total", **recipe, kind=kind) == run[kind], kind
        assert value(found, "rysh_tokens_total", **recipe, kind="input") > 0
        assert value(found, "rysh_cost_dollars_total", **recipe) == pytest.approx(run["cost"])
        # observed in the worker process, summed by daphne from the shared directory
        model = {"model": run["model"]}
        assert run["calls"] == {"task": 2, "judging": 1}
        assert value(found, "rysh_model_call_seconds_count", **model, leg="task", outcome="ok") == 2
        assert value(found, "rysh_model_call_seconds_count", **model, leg="judge", outcome="ok") == 1
        assert value(found, "rysh_tool_call_seconds_count", tool="save_result") == 1
        assert value(found, "rysh_worker_clusters") == 1

        # no run id, no prompt, result or argument text in any label
        labels = {v for (_, ls), _v in found.items() for _k, v in ls}
        assert not any(word in label for label in labels for word in ("secret-ish", "pineapple", "Saving", "only one"))
        assert str(pk) not in {v for (_, ls), _v in found.items() for k, v in ls if k != "le"}

        # the worker stops: what it observed stays (its files), the database's figures too
        stack.stop_process("qcluster")
        time.sleep(0.5)
        after = samples(_scrape(stack.port)[1])
        assert value(after, "rysh_model_call_seconds_count", **model, leg="task", outcome="ok") == 2
        assert value(after, "rysh_worker_clusters") == 0
    finally:
        stack.stop()


def test_the_anthropic_provider_counts_its_retries_not_its_last_failure(settings):
    """Through the real SDK against the fake server: two 500s then a reply are two retries; ten
    529s under max_retries=2 are two retries and a call that gave up."""
    settings.RYSH_METRICS = True  # with metrics off nothing is counted (the test below)

    def retries() -> float:
        return value(samples(figures_text()), "rysh_model_call_retries_total", model="claude-fake-9", leg="wrap-up")

    def ask(model: AnthropicModel) -> None:
        request = ModelRequest(
            model="claude-fake-9",
            system="s",
            messages=[{"role": "user", "content": "hi"}],
            tools=[],
            max_tokens=100,
            deadline=time.monotonic() + 10,
            purpose="wrap-up",
        )
        model.complete(request)

    before = retries()
    with FakeAnthropic() as fake:
        model = AnthropicModel(
            api_key="sk-ant-test-0123456789", base_url=fake.base_url, max_retries=2, backoff_seconds=0.01
        )
        fake.fail_next(500, times=2)
        ask(model)
        assert retries() == before + 2
        fake.fail_next(529, times=10)
        with pytest.raises(ModelError):
            ask(model)
        assert retries() == before + 4


def figures_text() -> str:
    """This process's own figures (no shared directory in the test process)."""
    return generate_latest(metrics.REGISTRY).decode()


# -- live push latency ------------------------------------------------------------------------------


def _pushes(path: str) -> tuple[float, float]:
    found = samples(figures_text())
    return value(found, "rysh_live_push_seconds_count", path=path), value(
        found, "rysh_live_push_seconds_sum", path=path
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["tail", "channel"])
def test_push_latency_is_observed_from_the_event_written_to_the_sockets(settings, path):
    """The embedded tail (an event another connection commits) and the channel layer's push (as
    a worker's push over Redis reaches the hub) each observe once per new HTML: when the event
    was written to when the view's HTML went to its sockets."""
    settings.RYSH_LIVE_TAIL, settings.RYSH_LIVE_POLL_MS = path == "tail", 20
    settings.RYSH_METRICS = True
    cookie = session_cookie(User.objects.create_user(f"watcher-{path}", password="x"))
    run = consumer_run()
    before = _pushes(path)

    async def go():
        socket, connected, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
        assert connected
        await socket.receive_from(timeout=5)  # its first state: nothing written, nothing observed
        assert _pushes(path) == before
        written = time.time()
        if path == "tail":
            await sync_to_async(_change)(run)
        else:
            await sync_to_async(Run.objects.filter(pk=run.pk).update)(last_verdict="YES")
            await sync_to_async(events.push)(run.pk, None, "verdict")
        assert "YES" in await socket.receive_from(timeout=5)
        seen = time.time() - written
        count, total = _pushes(path)
        assert count == before[0] + 1
        assert 0 < total - before[1] <= seen
        await socket.disconnect()

    async_to_sync(go)()


def _change(run: Run) -> None:
    """What a worker in another process does: write the state and record an event, one commit."""
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(last_verdict="YES")
        RunEvent.objects.create(run=run, kind="note", message="judged")


# -- a worker-only machine, and a fresh start --------------------------------------------------------


def test_serve_metrics_serves_this_machine_s_processes_figures_behind_the_token(tmp_path):
    shared = tmp_path / "metrics"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rysh_site.settings",
        "RYSH_DATA_DIR": str(tmp_path / "data"),
        "RYSH_METRICS": "true",
        "RYSH_METRICS_TOKEN": TOKEN,
        "RYSH_METRICS_DIR": str(shared),
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    shared.mkdir(mode=0o700)
    subprocess.run(
        [sys.executable, "-c", OBSERVE, "5"], cwd=ROOT, env={**env, "PROMETHEUS_MULTIPROC_DIR": str(shared)}, check=True
    )
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve_metrics", "--port", str(port), "--host", "127.0.0.1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, server)
        assert _scrape(port, token=None)[0] == 401
        assert _scrape(port, token="wrong")[0] == 401
        status, text = _scrape(port)
        assert status == 200
        found = samples(text)
        assert value(found, "rysh_model_call_seconds_count", model="claude-sonnet-4-5", leg="task") == 5
        assert "rysh_runs" not in text and "rysh_tokens" not in text  # the web's /metrics says those
        with pytest.raises(urllib.error.HTTPError) as elsewhere:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/", timeout=5)
        assert elsewhere.value.code == 404
    finally:
        server.terminate()
        server.wait(timeout=10)

    cleared = subprocess.run(
        [sys.executable, "manage.py", "clear_metrics"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert "cleared 2 file(s)" in cleared.stdout  # the observer's counter and histogram files
    assert list(shared.glob("*.db")) == []


@pytest.mark.django_db
def test_behind_https_a_scrape_is_not_redirected(client, settings, tmp_path):
    """RYSH_HTTPS=true redirects plain HTTP to HTTPS, but a scraper asks the process itself."""
    code = "import django, json; django.setup(); from django.conf import settings; print(json.dumps(settings.SECURE_REDIRECT_EXEMPT))"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rysh_site.settings",
        "RYSH_DATA_DIR": str(tmp_path),
        "RYSH_HTTPS": "true",
    }
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    settings.SECURE_SSL_REDIRECT, settings.SECURE_REDIRECT_EXEMPT = True, json.loads(out.stdout)
    settings.RYSH_METRICS, settings.RYSH_METRICS_TOKEN = True, TOKEN
    assert client.get("/history/").status_code == 301
    assert client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


@pytest.mark.django_db
def test_a_broker_that_does_not_answer_leaves_out_the_queue_not_the_scrape(monkeypatch):
    class Away:
        def queue_size(self):
            raise ConnectionError("redis is away")

    monkeypatch.setattr(figures, "broker", lambda: Away())
    found = samples(figures.exposition()[0].decode())
    assert not [name for name, _labels in found if name == "rysh_queue_depth"]  # its help and type only
    assert value(found, "rysh_worker_clusters") == 0


@pytest.mark.django_db
def test_a_scraper_that_asks_for_openmetrics_gets_it(client, settings):
    settings.RYSH_METRICS, settings.RYSH_METRICS_TOKEN = True, TOKEN
    accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}", "Accept": accept})
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    assert answer.content.decode().endswith("# EOF\n")


@pytest.mark.django_db
def test_a_prune_leaves_every_figure_but_the_deliveries_kept(settings):
    """Retention (ops/retention.py) removes old runs' steps, messages and events: the figures
    read summaries (runs, passes, the ledger, detached from its steps), so none of them moves."""
    make_runs(6, ended=timezone.now() - timedelta(days=400), tag="ancient")
    make_runs(2, ended=timezone.now() - timedelta(days=1), tag="recent")

    def database_figures() -> dict:
        return {k: v for k, v in samples(figures.exposition()[0].decode()).items() if k[0] != "rysh_deliveries"}

    before = database_figures()
    assert value(before, "rysh_tokens_total") > 0 and value(before, "rysh_passes_total") == 8
    pruned = retention_prune()
    assert pruned.total.rows > 0 and not Step.objects.filter(run_pass__run__name__startswith="ancient").exists()
    assert database_figures() == before
