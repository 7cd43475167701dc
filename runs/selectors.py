"""The read side of runs (HackSoft selectors): the live table (docs/dashboard.md, computed once for the
CLI and the pages), the parts of a run's page, and the history. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import Case, CharField, Count, F, Min, OuterRef, Q, QuerySet, Subquery, Sum, Value, When
from django.db.models.functions import Concat, Trunc, TruncDate
from django.utils import timezone
from django.utils.timesince import timesince

from budgets.units import format_duration, format_tokens
from runs.engine.verdicts import result_files
from runs.models import (
    ACTIVE_STATES,
    Approval,
    ApprovalState,
    LedgerEntry,
    Pass,
    Run,
    RunEvent,
    RunState,
    Step,
    StepStatus,
    WorkerBeat,
)
from runs.results import snapshots
from runs.results.report import cache_hit_percent
from runs.states import EventKind, PauseReason, allowed_controls
from rysh_site.filters import filter_given
from spend.prices import FREE_MODELS
from spend.selectors import start_of, zone

# -- the live table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LiveRow:
    run: Run
    pass_label: str
    state: str
    started_ago: str
    deadline: str
    verdict: str
    tokens_used: int
    tokens_cap: int
    wrap_up_mark: int  # tokens into a pass where the wrap-up takes over (0: no wrap-up)
    cache: str
    provider_note: str
    pass_used: int = 0  # tokens counted in the pass in flight (its judge included)
    in_flight: int = 0  # reserved for a model call not yet answered (counted, not yet settled)
    pass_task_cap: int = 0  # the task leg's share of a pass
    pass_wrap_cap: int = 0  # the wrap-up leg's share (floors included; 0: no wrap-up)

    @property
    def budget_text(self) -> str:
        mark = f", wrap-up at {format_tokens(self.wrap_up_mark)}/pass" if self.wrap_up_mark else ""
        return f"{format_tokens(self.tokens_used)}/{format_tokens(self.tokens_cap)}{mark}"

    @property
    def controls(self) -> list[str]:
        return allowed_controls(self.run)

    @property
    def pass_bar(self) -> dict:
        """Percent positions for the pass's budget bar: burn, the wrap-up mark, the wrap-up share."""
        total = max(self.pass_task_cap + self.pass_wrap_cap, 1)
        mark = 100.0 * self.pass_task_cap / total if self.pass_wrap_cap else 100.0
        return {
            "used": min(100.0, 100.0 * self.pass_used / total),
            "mark": mark,
            "shaded": 100.0 - mark,
            "used_text": format_tokens(self.pass_used),
            "cap_text": format_tokens(self.pass_task_cap + self.pass_wrap_cap),
            "mark_text": format_tokens(self.pass_task_cap),
            "total": total,
        }


def pass_caps(plan: dict, job_left: int | None = None) -> tuple[int, int]:
    """(task share, wrap-up share) of a pass as they can really be spent: a pass's allotment is
    min(its own, what the job has left) — `job_left` when the pass began, else the job's outer
    total — so a pass never shows a cap above the job's (the wrap-up's floor may exceed it).
    As the engine does (budgets.guard.leg_left), the task leg leaves the wrap-up's own share
    (before its floor) and the wrap-up gets what is left after the task."""
    split = plan.get("split", {})
    task = (split.get("task") or {}).get("tokens", 0)
    wrap = (split.get("takeover") or {}).get("tokens", 0) if split.get("takeover") else 0
    left = job_left if job_left is not None else (plan.get("outer_tokens") or None)
    if left is not None:
        kept_back = (split.get("raw_takeover") or {}).get("tokens", 0) if wrap else 0
        task = min(task, max(left - kept_back, 0))
        wrap = min(wrap, max(left - task, 0))
    return task, wrap


def _cache(run: Run) -> str:
    hit = cache_hit_percent(
        input_tokens=run.input_tokens, cache_read=run.cache_read_tokens, cache_write=run.cache_write_tokens
    )
    return "-" if hit is None else f"{hit:.0f}%"


def _deadline(run: Run, current: Pass | None) -> str:
    """Time left on the clock of the leg in flight (model and tool time; pauses do not count)."""
    plan = run.plan
    split = plan.get("split", {})
    if current is None or current.ended_at is not None:
        return "-"
    share = split.get("takeover") if current.phase == "wrap-up" else split.get("task")
    if not share:
        return "-"
    left = share["seconds"] - current.leg_seconds
    if plan.get("outer_seconds"):
        left = min(left, plan["outer_seconds"] - run.seconds_used)
    return f"in {format_duration(max(int(left), 0))}"


def live_row(run: Run, current: Pass | None, in_flight: int = 0, settled: int | None = None) -> LiveRow:
    plan = run.plan
    used = run.tokens_counted if settled is None else settled
    pass_used = current.tokens_counted if current else 0
    job_cap = plan.get("worst_tokens", 0)
    # what the job had left when this pass began: the pass's cap is never above it
    task_cap, wrap_cap = pass_caps(plan, max(job_cap - (used - pass_used), 0) if job_cap else None)
    started = run.started_at or run.created_at
    return LiveRow(
        run=run,
        pass_label=f"pass {run.pass_number}/{plan.get('passes', 1)}",
        state=run.state_label,
        started_ago=f"{timesince(started, timezone.now())} ago",
        deadline=_deadline(run, current),
        # settled spend (what the run row holds too): a call in flight is counted at its
        # reservation only by its pending step, which shows on hover
        verdict=run.last_verdict or "-",
        in_flight=in_flight,
        tokens_used=used,
        tokens_cap=job_cap,
        wrap_up_mark=task_cap if wrap_cap else 0,
        cache=_cache(run),
        provider_note="scripted (offline demo model)" if run.provider == "scripted" else run.executor_model,
        pass_used=pass_used,
        pass_task_cap=task_cap,
        pass_wrap_cap=wrap_cap,
    )


def live_rows(runs) -> list[LiveRow]:
    runs = list(runs)
    current = {}
    for p in Pass.objects.filter(run__in=runs).order_by("run_id", "number"):
        current[p.run_id] = p  # the last one per run wins
    pending, settled = spend_by_run(runs)
    return [live_row(run, current.get(run.pk), pending.get(run.pk, 0), settled.get(run.pk, 0)) for run in runs]


def spend_by_run(runs) -> tuple[dict[int, int], dict[int, int]]:
    """(reserved for calls in flight, settled) tokens per run. Settled spend is summed from the
    settled steps in one query, so it never mixes two moments (run total minus a reservation
    read later could even go negative)."""
    steps = Step.objects.filter(run_pass__run__in=runs).values_list("run_pass__run")
    pending = dict(steps.filter(status=StepStatus.PENDING).annotate(Sum("reserved_tokens")))
    settled = dict(steps.exclude(status=StepStatus.PENDING).annotate(Sum("counted_tokens")))
    return pending, settled


def quota_wait(run: Run) -> str:
    """Why a run paused on a quota waits (its `paused` event says what it needs), or ""."""
    if run.state != RunState.PAUSED or not PauseReason.is_quota(run.pause_reason):
        return ""
    event = RunEvent.objects.filter(run=run, kind=EventKind.PAUSED).order_by("-id").first()
    return event.message.partition(f"paused({run.pause_reason}): ")[2] if event else ""


def sandbox_wait(run: Run) -> str:
    """Why a queued workdir run waits for a worker that can sandbox (its `waiting` event, said
    since a worker last ran it), or ""."""
    if run.state != RunState.QUEUED:
        return ""
    ran = RunEvent.objects.filter(run=run, kind=EventKind.RUNNING).order_by("-id").values_list("id", flat=True).first()
    said = RunEvent.objects.filter(run=run, kind=EventKind.WAITING, id__gt=ran or 0).order_by("-id").first()
    return said.message if said else ""


def worker_sandboxes() -> set[str]:
    """What the worker clusters seen within RYSH_READY_WORKER_SECONDS said of their sandbox
    ("ok", "unavailable", "off"; "" from a worker that does not say)."""
    since = timezone.now() - timedelta(seconds=settings.RYSH_READY_WORKER_SECONDS)
    return set(WorkerBeat.objects.filter(seen__gte=since).values_list("sandbox", flat=True))


def pass_leg_tokens(passes: list[Pass]) -> dict[tuple[int, str], int]:
    """Tokens counted per (pass id, leg), for the timeline's bars: from the steps, and for steps
    retention pruned (ops/retention.py), from the ledger entries they leave behind (detached)."""
    totals: dict[tuple[int, str], int] = {}
    for run_pass_id, leg, counted in Step.objects.filter(run_pass__in=passes).values_list(
        "run_pass_id", "leg", "counted_tokens"
    ):
        totals[(run_pass_id, leg)] = totals.get((run_pass_id, leg), 0) + counted
    by_number = {(p.run_id, p.number): p.pk for p in passes}
    detached = LedgerEntry.objects.filter(run_id__in={p.run_id for p in passes}, step__isnull=True, rejudge=None)
    for run_id, number, leg, counted in detached.values_list("run_id", "pass_number", "purpose", "counted_tokens"):
        if (run_id, number) in by_number:
            key = (by_number[(run_id, number)], leg)
            totals[key] = totals.get(key, 0) + counted
    return totals


PRUNED = "pruned"  # the RunEvent retention leaves on a run it pruned (ops/retention.py); kept itself


def run_pruned(run: Run) -> dict[str, datetime]:
    """What retention removed from this run and when: {"steps": at, "media": at} (the run page
    says so where they were)."""
    found = {}
    for event in RunEvent.objects.filter(run=run, kind=PRUNED).order_by("id"):
        for what in event.data.get("what", []):
            found[what] = event.created_at
    return found


# -- the dashboard and a run's page ------------------------------------------------------------


def runs_active() -> QuerySet[Run]:
    return Run.objects.filter(state__in=ACTIVE_STATES).order_by("created_at")


def runs_recent(*, limit: int) -> list[Run]:
    return list(Run.objects.filter(state=RunState.FINISHED).order_by("-ended_at", "-id")[:limit])


def run_passes(run: Run) -> list[Pass]:
    return list(Pass.objects.filter(run=run).order_by("number"))


def run_steps_recent(run: Run, *, limit: int) -> list[Step]:
    """The newest `limit` steps, oldest first (the log reads top to bottom)."""
    steps = (
        Step.objects.filter(run_pass__run=run)
        .select_related("run_pass")
        .order_by("-run_pass__number", "-number")[:limit]
    )
    return list(steps)[::-1]


def run_todo(run: Run) -> list[dict]:
    """The agent's plan as its todo tool last wrote it (docs/agent-tools.md): [{text, status}]."""
    data = RunEvent.objects.filter(run=run, kind=EventKind.TODO).order_by("-id").values_list("data", flat=True).first()
    return list((data or {}).get("items") or [])


def run_sub_agents(run: Run) -> list[dict]:
    """Each sub-agent of the run as a child of the step that started it: its steps, its tokens
    (counted once, in the ledger like every step's) and its money."""
    rows = (
        Step.objects.filter(run_pass__run=run)
        .exclude(agent="")
        .values("agent", "run_pass__number", "parent_step__number")
        .annotate(steps=Count("id"), tokens=Sum("counted_tokens"), cost=Sum("ledger_entry__cost"), first=Min("id"))
        .order_by("first")
    )
    return [
        {
            "agent": row["agent"],
            "pass_number": row["run_pass__number"],
            "parent_step": row["parent_step__number"],
            "steps": row["steps"],
            "tokens": row["tokens"] or 0,
            "cost": row["cost"],
        }
        for row in rows
    ]


def run_events_recent(run: Run, *, limit: int) -> list[RunEvent]:
    return list(RunEvent.objects.filter(run=run).order_by("-id")[:limit])


def run_event_latest_id(*, run_id: int | None = None) -> int:
    """The newest event's id (of one run, or of all): what a live socket compares to know
    that something changed."""
    events = RunEvent.objects.all() if run_id is None else RunEvent.objects.filter(run_id=run_id)
    return events.order_by("-id").values_list("id", flat=True).first() or 0


def run_approvals(run: Run, *, limit: int) -> list[Approval]:
    return list(Approval.objects.filter(run=run).select_related("answered_by").order_by("-id")[:limit])


def approvals_pending(*, limit: int) -> list[Approval]:
    """Every approval a person still has to answer, across runs, the soonest to expire first."""
    return list(
        Approval.objects.filter(state=ApprovalState.PENDING)
        .select_related("run")
        .defer("run__recipe_text", "run__plan")
        .order_by("expires_at", "id")[:limit]
    )


def approvals_pending_count() -> int:
    return Approval.objects.filter(state=ApprovalState.PENDING).count()


def run_filmstrip(run: Run, *, limit: int) -> list[Step]:
    """The newest `limit` steps that kept a screenshot, oldest first."""
    steps = (
        Step.objects.filter(run_pass__run=run)
        .exclude(screenshot="")
        .select_related("run_pass")
        .order_by("-run_pass__number", "-number")[:limit]
    )
    return list(steps)[::-1]


def run_videos(run: Run) -> list[str]:
    folder = Path(settings.RYSH_VIDEOS_DIR) / str(run.pk)
    return sorted(p.name for p in folder.glob("*.webm")) if folder.is_dir() else []


def run_result_files(run: Run) -> list[dict]:
    """The files this run saved, newest first. A run still going shows its folder as it is now;
    a run that stopped going shows its snapshots (runs/snapshots.py), so a later run writing the
    same names never changes this run's page. Runs from before snapshots show the folder."""
    if not run.is_active and snapshots.has_snapshots(run):
        return [
            {"name": r.name, "size": r.size, "pass": r.run_pass.number, "kept": r.blob_id is not None}
            for r in snapshots.run_snapshot_files(run)
        ]
    if run.snapshots_pruned_at is not None:
        return []
    return _folder_files(run)


def _folder_files(run: Run) -> list[dict]:
    """The files in the run's folder changed while it was going (the folder is the recipe's,
    shared by its runs; the report is shown apart)."""
    folder = Path(run.output_dir) if run.output_dir else None
    if folder is None or not folder.is_dir() or run.started_at is None:
        return []
    start = run.results_since()
    end = run.ended_at.timestamp() + 1 if run.ended_at else float("inf")
    files = [p for p in result_files(folder, since=start) if p.stat().st_mtime <= end]
    files.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
    return [{"name": str(p.relative_to(folder)), "size": p.stat().st_size, "pass": None, "kept": True} for p in files]


# -- history -------------------------------------------------------------------------------------


def run_history(
    *, recipe: str = "", kind: str = "", cause: str = "", since: date | None = None, until: date | None = None
) -> QuerySet[Run]:
    """Finished runs, newest first; each filter applies only when given."""
    runs = filter_given(
        Run.objects.filter(state=RunState.FINISHED),
        name__icontains=recipe,
        kind=kind,
        cause__icontains=cause,
        ended_at__date__gte=since,
        ended_at__date__lte=until,
    )
    return runs.order_by("-ended_at", "-id")


def run_history_per_day(runs: QuerySet[Run], *, since: date) -> list[dict]:
    """Tokens, cost and count per day from `since` on, for the days that had a run."""
    since_at = timezone.make_aware(datetime.combine(since, time.min))  # a range the index can use
    return list(
        runs.filter(ended_at__gte=since_at)
        .annotate(day=TruncDate("ended_at"))
        .values("day")
        .annotate(tokens=Sum("tokens_counted"), cost=Sum("cost"), n=Count("id"))
        .order_by("day")
    )


# -- the ledger by day or month (the Spend page; its totals and chart are spend.selectors') -----

NOBODY = "(nobody)"  # runs no person started (the CLI without a user)
REJUDGE = "(re-judge)"  # a re-judge's calls (no run) whose re-judge was deleted
# who spent: a run's recipe or the person each call was charged to (who started the run, or who
# continued or granted it since); a re-judge's calls (run=None) show as "re-judge of kind/name"
# and count for the person who asked for it
BY = {
    "recipe": Case(
        When(run__isnull=False, then=F("run__target")),
        When(rejudge__isnull=False, then=Concat(Value("re-judge of "), F("rejudge__target"))),
        default=Value(REJUDGE),
        output_field=CharField(),
    ),
    "person": F("charged_to__username"),  # whose quota counted the call (Run.charged_to then)
}


def spend_rows(*, by: str, period: str, since: date, until: date) -> list[dict]:
    """Counted tokens, dollars and calls per (day or month, recipe or person) from `since` to
    `until` (whole local days), oldest first. `cost` sums the priced calls only (None when
    none was priced); `unpriced` counts the tokens of calls whose model had no price, `offline`
    those of the offline scripted model (free: never unpriced)."""
    entries = LedgerEntry.objects.filter(created_at__gte=start_of(since), created_at__lt=start_of(until + timedelta(1)))
    rows = (
        entries.annotate(bucket=Trunc("created_at", period, tzinfo=zone()), who=BY[by])
        .values("bucket", "who")
        .annotate(
            # before `cost`, which would shadow the field of the same name
            unpriced=Sum("counted_tokens", filter=Q(cost__isnull=True) & ~Q(model__in=FREE_MODELS), default=0),
            offline=Sum("counted_tokens", filter=Q(model__in=FREE_MODELS), default=0),
            tokens=Sum("counted_tokens"),
            cache_read=Sum("cache_read_tokens"),
            cost=Sum("cost"),
            calls=Count("id"),
        )
        .order_by("bucket", "who")
    )
    return [{**row, "bucket": row["bucket"].astimezone(zone()).date(), "who": row["who"] or NOBODY} for row in rows]


# -- a recipe's runs (the recipe list and page) -------------------------------------------------------

RECENT_RUNS = 20


def recipes_with_last_run(recipes: QuerySet) -> QuerySet:
    """The catalogue's recipes, each with its last run's id, state, pause reason and cause: one
    subquery each, so the list still costs a constant number of queries."""
    last_run = Run.objects.filter(recipe=OuterRef("pk")).order_by("-created_at", "-id")
    return recipes.annotate(
        last_run_id=Subquery(last_run.values("id")[:1]),
        last_run_state=Subquery(last_run.values("state")[:1]),
        last_run_pause=Subquery(last_run.values("pause_reason")[:1]),
        last_run_cause=Subquery(last_run.values("cause")[:1]),
    )


def recipe_runs_recent(recipe, *, limit: int = RECENT_RUNS) -> list[Run]:
    return list(
        Run.objects.filter(recipe=recipe)
        .only(
            "id",
            "state",
            "pause_reason",
            "phase",
            "cause",
            "pass_number",
            "tokens_counted",
            "cost",
            "created_at",
            "ended_at",
        )
        .order_by("-created_at", "-id")[:limit]
    )


def package_runs_recent(*, package, limit: int = 10):
    """The latest runs of an agent package, newest first (docs/packages.md)."""
    return Run.objects.filter(package_version__package=package).order_by("-created_at", "-id")[:limit]
