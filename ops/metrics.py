"""Prometheus metrics (docs: Metrics): who may scrape, and what a scrape says.

Two kinds of figures:
- read from the database at scrape time by DatabaseCollector: exact across processes and
  machines, and they survive restarts. A fixed number of aggregate queries (one per family, plus
  one per quota when its window has rolled over), however many runs there are. They read
  summaries only — runs' rows, passes, the ledger the Spend page sums, quotas, deliveries, eval
  suites and their cases — never steps or messages, which retention prunes;
- observed in-process (rysh_site/metrics.py): model and tool latency, retries, push latency.
  With RYSH_METRICS=true every process of the machine writes them to RYSH_METRICS_DIR
  (PROMETHEUS_MULTIPROC_DIR) and a scrape sums the directory (MultiProcessCollector).
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import logging
import os
from pathlib import Path

from django.conf import settings
from django.db.models import Count, Max, Sum
from django_q.brokers import get_broker
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from evals.models import CaseResult, CaseState, Suite, SuiteSide, SuiteState
from notify.models import Delivery
from ops import health
from runs.models import LedgerEntry, Pass, Run
from runs.selectors import BY
from rysh_site import metrics
from rysh_site.metrics_env import MULTIPROC_ENV
from rysh_site.proxies import client_address
from spend.models import Quota, Scope
from spend.quotas import current

log = logging.getLogger(__name__)

TOKEN_KINDS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_write_tokens",
}


# -- who may scrape --------------------------------------------------------------------------------


def refusal(request) -> int | None:
    """None when the request may scrape, else the status to answer (no detail): 403 for an
    address outside RYSH_METRICS_ALLOW, 401 for a missing or wrong RYSH_METRICS_TOKEN."""
    if settings.RYSH_METRICS_ALLOW and not _allowed(client_address(request)):
        return 403
    if settings.RYSH_METRICS_TOKEN:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        # compared in constant time, as bytes: a str compare refuses non-ASCII with an error
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode(), settings.RYSH_METRICS_TOKEN.encode()
        ):
            return 401
    return None


def _allowed(address: str | None) -> bool:
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return any(ip in network for network in settings.RYSH_METRICS_ALLOW)


# -- what a scrape says ----------------------------------------------------------------------------


def exposition(accept: str = "", *, database: bool = True) -> tuple[bytes, str]:
    """Every figure, the database's and the processes' observations, and its content type, in
    the format the scraper's Accept header asks for (prometheus_client's own negotiation: the
    text format 0.0.4 by default, OpenMetrics when asked)."""
    registry = CollectorRegistry(auto_describe=False)
    if database:
        registry.register(DatabaseCollector())
    path = os.environ.get(MULTIPROC_ENV)
    if path and os.path.isdir(path):
        MultiProcessCollector(registry, path=path)
    else:  # metrics off in this process's start-up (tests, a shell): this process's own figures
        registry.register(metrics.REGISTRY)
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type


def clear_shared_dir(path: Path) -> int:
    """Remove the processes' files (prometheus_client's *.db) from the shared directory."""
    removed = 0
    for file in Path(path).glob("*.db"):
        file.unlink(missing_ok=True)
        removed += 1
    return removed


class DatabaseCollector:
    """The figures read from the database at scrape time (exact, shared by every process)."""

    def collect(self):
        yield from runs_by_state()
        yield passes_by_verdict()
        yield from tokens_and_dollars()
        yield from quota_use()
        yield from queue_and_workers()
        yield deliveries_by_state()
        yield from eval_suites()


def runs_by_state():
    runs = GaugeMetricFamily(
        "rysh_runs",
        "Runs by recipe, state and pause reason (every run kept).",
        labels=["recipe", "state", "pause_reason"],
    )
    rows = Run.objects.values("target", "state", "pause_reason").annotate(n=Count("id")).order_by()
    for row in rows:
        runs.add_metric([row["target"], row["state"], row["pause_reason"]], row["n"])
    yield runs


def passes_by_verdict() -> CounterMetricFamily:
    passes = CounterMetricFamily(
        "rysh_passes", "Passes by recipe and the judge's verdict (YES | NO | none).", labels=["recipe", "verdict"]
    )
    rows = Pass.objects.values("run__target", "verdict").annotate(n=Count("id")).order_by()
    for row in rows:
        passes.add_metric([row["run__target"], row["verdict"] or "none"], row["n"])
    return passes


def tokens_and_dollars():
    """The ledger's sums (the Spend page's source), by recipe (as Spend names it) and model."""
    tokens = CounterMetricFamily(
        "rysh_tokens",
        "Tokens by recipe, model and kind (input | output | cache_read | cache_write).",
        labels=["recipe", "model", "kind"],
    )
    counted = CounterMetricFamily(
        "rysh_tokens_counted",
        "Counted tokens (input + cache write + output: what budgets count), by recipe and model.",
        labels=["recipe", "model"],
    )
    dollars = CounterMetricFamily(
        "rysh_cost_dollars", "Dollars by recipe and model (priced calls only).", labels=["recipe", "model"]
    )
    calls = CounterMetricFamily(
        "rysh_model_calls", "Model calls in the ledger, by recipe and model.", labels=["recipe", "model"]
    )
    sums = {kind: Sum(field, default=0) for kind, field in TOKEN_KINDS.items()}
    rows = (
        LedgerEntry.objects.annotate(who=BY["recipe"])
        .values("who", "model")
        .annotate(**sums, counted=Sum("counted_tokens", default=0), dollars=Sum("cost"), calls=Count("id"))
        .order_by()
    )
    for row in rows:
        who, model = row["who"], row["model"]
        for kind in TOKEN_KINDS:
            tokens.add_metric([who, model, kind], row[kind])
        counted.add_metric([who, model], row["counted"])
        dollars.add_metric([who, model], float(row["dollars"] or 0))
        calls.add_metric([who, model], row["calls"])
    yield from (tokens, counted, dollars, calls)


def quota_use():
    """Each quota's current window (rolled over first, as the Quotas page does)."""
    labels = ["scope", "subject", "window", "unit"]
    families = {
        name: GaugeMetricFamily(f"rysh_quota_{name}", text, labels=labels)
        for name, text in (
            ("limit", "A quota's limit (unit: tokens | dollars)."),
            ("used", "What a quota's current window has settled."),
            ("reserved", "What calls in flight hold against a quota."),
        )
    }
    for quota in Quota.objects.select_related("user"):
        q = current(quota)
        subject = _subject(q)
        for unit, limit, used, reserved in (
            ("tokens", q.tokens, q.used_tokens, q.reserved_tokens),
            ("dollars", q.micros, q.used_micros, q.reserved_micros),
        ):
            if limit is None:
                continue
            scale = 1 if unit == "tokens" else 1e-6
            key = [q.scope, subject, q.window, unit]
            families["limit"].add_metric(key, limit * scale)
            families["used"].add_metric(key, used * scale)
            families["reserved"].add_metric(key, reserved * scale)
    yield from families.values()


def _subject(quota: Quota) -> str:
    if quota.scope == Scope.RECIPE:
        return quota.target
    if quota.scope == Scope.USER:
        return quota.user.get_username() if quota.user else "(deleted)"
    return ""


@functools.cache
def broker():
    """django-q2's broker, made once per process (a Redis broker holds a connection pool)."""
    return get_broker()


def queue_and_workers():
    queued = GaugeMetricFamily("rysh_queue_depth", "Tasks waiting in the django-q2 queue.")
    try:
        queued.add_metric([], broker().queue_size() or 0)
    except Exception:  # the broker away (Redis down): the scrape says the rest, without this sample
        log.warning("metrics: the queue's size could not be read", exc_info=True)
    workers = GaugeMetricFamily(
        "rysh_worker_clusters", "Worker clusters (manage.py qcluster) seen within RYSH_READY_WORKER_SECONDS."
    )
    workers.add_metric([], health.workers_seen().count())
    yield from (queued, workers)


def deliveries_by_state() -> GaugeMetricFamily:
    deliveries = GaugeMetricFamily(
        "rysh_deliveries",
        "Notification deliveries kept, by channel kind and outcome (pending | sent | failed).",
        labels=["channel_kind", "state"],
    )
    rows = Delivery.objects.values("channel__kind", "state").annotate(n=Count("id")).order_by()
    for row in rows:
        deliveries.add_metric([row["channel__kind"], row["state"]], row["n"])
    return deliveries


# -- eval suites (docs/evals.md) -------------------------------------------------------------------

PATH_LABEL = "path"  # every `auto eval PATH` suite: its folder is not a label value (unbounded)
ENDED = (SuiteState.DONE, SuiteState.CEILING)


def _recipe_label(target: str, side: str) -> str:
    return PATH_LABEL if side == SuiteSide.PATH else target


def eval_suites():
    """Suites and their cases: outcomes counted, the last ended suite's pass rate per recipe and
    side, and what suites spent (their case runs count in rysh_tokens too: they are the recipe's
    runs). Three queries, whatever the number of suites."""
    yield eval_cases_by_outcome()
    yield eval_pass_rate()
    yield from eval_spend()


def eval_cases_by_outcome() -> CounterMetricFamily:
    cases = CounterMetricFamily(
        "rysh_eval_cases",
        "Eval cases graded, by recipe, side (main | change | path) and outcome (passed | failed | error | broken).",
        labels=["recipe", "side", "outcome"],
    )
    counted: dict[tuple[str, str, str], int] = {}
    graded = (CaseState.PASSED, CaseState.FAILED, CaseState.ERROR, CaseState.BROKEN)
    rows = CaseResult.objects.filter(state__in=graded).values("suite__target", "suite__side", "state")
    for row in rows.annotate(n=Count("id")).order_by():
        key = (_recipe_label(row["suite__target"], row["suite__side"]), row["suite__side"], row["state"])
        counted[key] = counted.get(key, 0) + row["n"]
    for key, n in sorted(counted.items()):
        cases.add_metric(list(key), n)
    return cases


def eval_pass_rate() -> GaugeMetricFamily:
    rate = GaugeMetricFamily(
        "rysh_eval_pass_rate",
        "The last ended eval suite's pass rate (cases passed / cases), by recipe and side (main | change).",
        labels=["recipe", "side"],
    )
    last = (
        Suite.objects.filter(state__in=ENDED, side__in=(SuiteSide.MAIN, SuiteSide.CHANGE))
        .values("target", "side")
        .annotate(last=Max("id"))
        .values("last")
    )
    tally: dict[tuple[str, str], list[int]] = {}
    rows = CaseResult.objects.filter(suite_id__in=last).values("suite__target", "suite__side", "state")
    for row in rows.annotate(n=Count("id")).order_by():
        passed_and_all = tally.setdefault((row["suite__target"], row["suite__side"]), [0, 0])
        passed_and_all[0] += row["n"] if row["state"] == CaseState.PASSED else 0
        passed_and_all[1] += row["n"]
    for (target, side), (passed, total) in sorted(tally.items()):
        rate.add_metric([target, side], passed / total)
    return rate


def eval_spend():
    suites = CounterMetricFamily(
        "rysh_eval_suites",
        "Eval suites started, by recipe, side and state (running | done | ceiling).",
        labels=["recipe", "side", "state"],
    )
    tokens = CounterMetricFamily(
        "rysh_eval_tokens_counted",
        "Counted tokens eval suites spent (their case runs and rubric calls), by recipe and side.",
        labels=["recipe", "side"],
    )
    dollars = CounterMetricFamily(
        "rysh_eval_cost_dollars",
        "Dollars eval suites spent (priced calls only), by recipe and side.",
        labels=["recipe", "side"],
    )
    by_state: dict[tuple[str, str, str], int] = {}
    spent: dict[tuple[str, str], list] = {}
    rows = Suite.objects.values("target", "side", "state").annotate(
        n=Count("id"), tokens=Sum("tokens_counted", default=0), dollars=Sum("cost")
    )
    for row in rows.order_by():
        recipe = _recipe_label(row["target"], row["side"])
        key = (recipe, row["side"], row["state"])
        by_state[key] = by_state.get(key, 0) + row["n"]
        sums = spent.setdefault((recipe, row["side"]), [0, 0.0])
        sums[0] += row["tokens"]
        sums[1] += float(row["dollars"] or 0)
    for key, n in sorted(by_state.items()):
        suites.add_metric(list(key), n)
    for key, (counted, cost) in sorted(spent.items()):
        tokens.add_metric(list(key), counted)
        dollars.add_metric(list(key), cost)
    yield from (suites, tokens, dollars)
