"""Re-judge: a proposed judge (a new `until:` or judge model) over a recipe's last N judged
passes, read from their immutable result snapshots, under its own small hard token budget.

The estimate is shown before anything is spent: per pass, the judge request's byte bound (as
the engine's plan bounds it) plus JUDGE_MAX_TOKENS; the budget is that worst case, capped by
RYSH_REJUDGE_MAX_TOKENS. While it runs, no call is made unless what it may count (its input
bound + max_tokens) fits what the budget has left, so tokens_counted never passes
budget_tokens. Each call is one LedgerEntry (run=None, rejudge=<it>, purpose "rejudge"), so
the Spend page and the quotas count it.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from functools import lru_cache, partial
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django_q.tasks import async_task

from agents.ports import ModelError, ModelPort, ModelRequest
from agents.providers import ProviderError, choose_provider, model_for, preflight_anthropic
from agents.scripted import ScriptError
from audit.services import audit_record
from budgets.efforts import takes_effort
from budgets.guard import input_bound
from budgets.plan import JUDGE_MAX_TOKENS
from budgets.prices import format_money
from budgets.quota import DAY, window_end, window_start
from budgets.units import format_tokens
from catalogue.recipe import RecipeError, fill_chain_text, parse_recipe, render
from catalogue.spec import RecipeSpec
from runs.engine import verdicts as judging
from runs.engine.call import Called, DirectReservation, budgeted_call, call_size, counted_bound
from runs.models import Pass, Phase, Rejudge, RejudgeItem, RejudgeState, Run, RunState, VerdictLabel
from runs.results import snapshots
from runs.services import SCRIPTED_MODEL, RunRefused, recipe_source
from spend import quotas
from spend.prices import micros_per_token
from workspaces.selectors import working_folder

log = logging.getLogger(__name__)
EXECUTE_FUNC = "runs.worker.execute_rejudge"  # the worker's entry point, queued by path
PURPOSE = "rejudge"
CALL_SECONDS = 300
COST_PLACES = Decimal("0.000001")
SCRIPTED_LABEL = "offline scripted judge"
SCRIPTED_NOTE = (
    "offline scripted judge: no ANTHROPIC_API_KEY, so each pass is answered from the recipe's "
    "<name>.script.yaml — the pass's `judge:` reply, or a `judge_if:` reply whose words the new goal "
    "holds; it does not understand the goal, so its verdicts show the mechanics, not what a real judge would say"
)


ACTIVE_STATES = (RejudgeState.QUEUED, RejudgeState.RUNNING)


class RejudgeRefused(Exception):
    """A re-judge that cannot start; the message says why."""


@dataclass(frozen=True)
class Candidate:
    run_pass: Pass
    name: str  # the result file judged
    text: str  # what the judge reads (capped as the judge caps it)


@dataclass(frozen=True)
class Estimate:
    target: str
    until: str
    provider: str  # anthropic | scripted
    judge_model: str
    script_path: str
    requested: int
    candidates: list[Candidate]
    worst_tokens: int  # every candidate's input bound + JUDGE_MAX_TOKENS
    budget_tokens: int  # worst_tokens, capped by RYSH_REJUDGE_MAX_TOKENS
    money: Decimal | None  # the budget priced at the model's dearest counted rate; None: unpriced
    judge_effort: str = ""  # the recipe's `loop.while.effort`, sent to a model that takes one

    @property
    def capped(self) -> bool:
        return self.budget_tokens < self.worst_tokens

    @property
    def provider_label(self) -> str:
        return provider_label(self.provider)

    @property
    def fingerprint(self) -> str:
        """What the person saw, in a few characters the form carries back: the goal, the judge,
        the passes and the most it may spend. Anything else at the press refuses it."""
        seen = [self.target, self.until, self.provider, self.judge_model, str(self.budget_tokens), str(self.money)]
        seen += [str(c.run_pass.pk) for c in self.candidates]
        return hashlib.sha256("\x1f".join(seen).encode()).hexdigest()[:16]

    def describe(self) -> str:
        """One line, as the review page and the CLI show it before anything is spent."""
        money = (
            "free (offline)"
            if self.provider == "scripted"
            else (format_money(self.money) if self.money is not None else "unpriced")
        )
        line = (
            f"re-judge {len(self.candidates)} pass(es) of {self.target} with {self.judge_model} "
            f"({self.provider_label}): at most {self.budget_tokens:,} tokens ({format_tokens(self.budget_tokens)}), {money}"
        )
        if len(self.candidates) < self.requested:
            line += f"; only {len(self.candidates)} of the {self.requested} asked for have a saved result"
        if self.capped:
            line += f"; the worst case is {self.worst_tokens:,}, over the ceiling of {self.budget_tokens:,}: later passes may be left not judged"
        return line


def provider_label(provider: str) -> str:
    return SCRIPTED_LABEL if provider == "scripted" else "anthropic"


# -- reads ---------------------------------------------------------------------------------------


def rejudge_candidates(*, target: str, n: int) -> list[Candidate]:
    """The recipe's last `n` judged passes (newest first, across its finished runs) whose
    snapshot has a readable result: exactly what their judge read."""
    n = max(1, min(n, settings.RYSH_REJUDGE_MAX_PASSES))
    passes = (
        Pass.objects.filter(
            run__target=target, run__state=RunState.FINISHED, verdict__in=("YES", "NO"), snapshot_at__isnull=False
        )
        .select_related("run")
        .order_by("-run__created_at", "-run_id", "-number")
    )
    found = []
    for run_pass in passes.iterator(chunk_size=50):
        read = snapshots.judge_input(run_pass)
        if read is not None:
            found.append(Candidate(run_pass, read[0], read[1]))
            if len(found) == n:
                break
    return found


def judge_messages(until: str, candidate: Candidate) -> list[dict]:
    goal = goal_for(until, candidate.run_pass.run)
    text = judging.judge_message(goal, (candidate.name, candidate.text))
    return [{"role": "user", "content": [{"type": "text", "text": text}]}]


def goal_for(until: str, run: Run) -> str:
    """The new goal as that run's judge would read it: its placeholders filled with the run's
    arguments and folders (docs/recipes.md), the argument names read from the text the run was armed with."""
    spec = _armed_spec(run.recipe_text, run.recipe_path, run.kind)
    if spec is None:
        return until
    previous = run.chain_parent.output_dir if run.chain_parent_id and run.chain_parent else ""
    until = fill_chain_text(until, results_dir=previous, run=str(run.chain_parent_id or ""))  # docs/chains.md
    return render(until, spec=spec, args=run.args, output_dir=run.output_dir, workdir=working_folder(run))


@lru_cache(maxsize=64)
def _armed_spec(text: str, path: str, kind: str) -> RecipeSpec | None:
    try:
        return parse_recipe(text, path=path, kind=kind)
    except RecipeError:
        return None


def judge_bound(until: str, candidate: Candidate) -> int:
    """The request's counted input, bounded by its bytes (as the engine's plan bounds it)."""
    return input_bound(system=judging.JUDGE_SYSTEM, tools=[], messages=judge_messages(until, candidate), last=None)


def _script_for(kind: str, name: str, target: str) -> Path | None:
    try:
        script = recipe_source(kind=kind, name_or_path=name, catalogue_only=True).script
    except RunRefused:
        script = None
    if script is None:  # a recipe run from a file: the script its newest run used
        used = Run.objects.filter(target=target).exclude(script_path="").order_by("-created_at", "-id").first()
        if used is not None and Path(used.script_path).is_file():
            script = Path(used.script_path)
    return script


def rejudge_estimate(
    *, kind: str, name: str, until: str, judge_model: str, n: int, provider: str | None = None, judge_effort: str = ""
) -> Estimate:
    """What a re-judge would judge and the most it may spend, before it starts; the provider
    is the one a run of the recipe would get (Claude with a key, else the offline script)."""
    target = f"{kind}/{name}"
    script = _script_for(kind, name, target)
    try:
        chosen = choose_provider(provider, target=target, script=script)
    except ProviderError as exc:
        raise RejudgeRefused(str(exc)) from None
    model = SCRIPTED_MODEL if chosen == "scripted" else judge_model
    candidates = rejudge_candidates(target=target, n=n)
    worst = sum(judge_bound(until, c) + JUDGE_MAX_TOKENS for c in candidates)
    budget = min(worst, settings.RYSH_REJUDGE_MAX_TOKENS)
    rate = micros_per_token(model, budget)
    money = None if rate is None else (Decimal(budget) * rate / 1_000_000).quantize(COST_PLACES)
    return Estimate(
        target=target,
        until=until,
        provider=chosen,
        judge_model=model,
        script_path=str(script) if chosen == "scripted" and script else "",
        requested=n,
        candidates=candidates,
        worst_tokens=worst,
        budget_tokens=budget,
        money=money,
        judge_effort=judge_effort,
    )


# -- writes --------------------------------------------------------------------------------------


def rejudge_start(
    *,
    kind: str,
    name: str,
    until: str,
    judge_model: str,
    n: int,
    judge_effort: str = "",
    user=None,
    change_request=None,
    provider: str | None = None,
    enqueue: bool = True,
    seen_estimate: str | None = None,
) -> Rejudge:
    """Create the re-judge and its items, and queue it for a worker once this commits.

    From a change request: one re-judge of it queued or running at a time, and a person starts
    at most RYSH_REJUDGE_DAILY_MAX a day. `seen_estimate`: the fingerprint of the estimate the
    person was shown (the review page's form); one that no longer matches is refused."""
    if n < 1 or n > settings.RYSH_REJUDGE_MAX_PASSES:
        raise RejudgeRefused(f"N must be between 1 and {settings.RYSH_REJUDGE_MAX_PASSES}")
    if not until.strip():
        raise RejudgeRefused("the goal (until) is empty: nothing to judge against")
    if change_request is not None:
        _refuse_while_active(change_request)
    estimate = rejudge_estimate(
        kind=kind, name=name, until=until, judge_model=judge_model, n=n, provider=provider, judge_effort=judge_effort
    )
    if not estimate.candidates:
        raise RejudgeRefused(f"{estimate.target} has no judged pass with a saved result to re-judge")
    if seen_estimate is not None and seen_estimate != estimate.fingerprint:
        raise RejudgeRefused(
            f"the estimate changed since your page showed it; it is now: {estimate.describe()}. "
            "Read it, then press Re-judge again."
        )
    if estimate.provider == "anthropic":
        try:
            preflight_anthropic()
        except ProviderError as exc:
            raise RejudgeRefused(str(exc)) from None
    try:
        return _create(estimate, n=n, user=user, change_request=change_request, enqueue=enqueue)
    except IntegrityError:  # another press of the same change won the race (the constraint)
        if change_request is not None:
            _refuse_while_active(change_request)
        raise


def _create(estimate: Estimate, *, n: int, user, change_request, enqueue: bool) -> Rejudge:
    person = user if getattr(user, "is_authenticated", False) else None
    with transaction.atomic():
        if person is not None:
            _take_daily(person)
        rejudge = Rejudge.objects.create(
            change_request=change_request,
            target=estimate.target,
            until=estimate.until,
            judge_model=estimate.judge_model,
            judge_effort=estimate.judge_effort,
            provider=estimate.provider,
            script_path=estimate.script_path,
            requested=n,
            budget_tokens=estimate.budget_tokens,
            requested_by=person,
        )
        RejudgeItem.objects.bulk_create(
            [
                RejudgeItem(
                    rejudge=rejudge,
                    run_pass=c.run_pass,
                    position=i,
                    result_name=c.name,
                    old_verdict=c.run_pass.verdict,
                    old_reason=c.run_pass.reason,
                )
                for i, c in enumerate(estimate.candidates, start=1)
            ]
        )
        audit_record(
            actor=user,
            action="rejudge.start",
            target=rejudge,
            detail={
                "passes": len(estimate.candidates),
                "budget_tokens": estimate.budget_tokens,
                "change": getattr(change_request, "pk", None),
            },
        )
        if enqueue:
            transaction.on_commit(lambda: enqueue_rejudge(rejudge.pk))
    return rejudge


def rejudge_active(change_request) -> Rejudge | None:
    """The change's re-judge still queued or running, if any (there is one at most)."""
    return (
        Rejudge.objects.filter(change_request=change_request, state__in=ACTIVE_STATES)
        .select_related("requested_by")
        .first()
    )


def _refuse_while_active(change_request) -> None:
    active = rejudge_active(change_request)
    if active is not None:
        who = active.requested_by.get_username() if active.requested_by else "someone"
        raise RejudgeRefused(
            f"re-judge #{active.pk} of this change (started by {who} at "
            f"{timezone.localtime(active.created_at):%H:%M}) is still {active.state}: one at a time; "
            "wait for it to finish"
        )


def rejudges_today(user, *, now=None) -> int:
    """How many re-judges `user` started today (the calendar day in TIME_ZONE)."""
    start = window_start(DAY, now or timezone.now(), settings.TIME_ZONE)
    return Rejudge.objects.filter(requested_by=user, created_at__gte=start).count()


def _take_daily(user) -> None:
    """Inside the transaction that creates the re-judge: the person's row locked first
    (PostgreSQL: FOR UPDATE; SQLite: IMMEDIATE transactions hold the write lock), so two
    presses at once are counted one after the other and cannot both pass the cap."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    cap, now = settings.RYSH_REJUDGE_DAILY_MAX, timezone.now()
    if rejudges_today(user, now=now) >= cap:
        again = timezone.localtime(window_end(DAY, window_start(DAY, now, settings.TIME_ZONE), settings.TIME_ZONE))
        raise RejudgeRefused(
            f"you have started {cap} re-judges today, the most one person may (RYSH_REJUDGE_DAILY_MAX); "
            f"you can start more from {again:%Y-%m-%d %H:%M %Z}"
        )


def enqueue_rejudge(rejudge_id: int) -> None:
    async_task(EXECUTE_FUNC, rejudge_id, task_name=f"rejudge-{rejudge_id}", group="rejudges")


def rejudge_execute(rejudge_id: int, *, model: ModelPort | None = None) -> Rejudge | None:
    """Judge every item with the new goal and model, within the budget; None when another
    worker had already claimed it."""
    # The claim: only one worker (a retried task, a second cluster) ever runs a re-judge.
    claimed = Rejudge.objects.filter(pk=rejudge_id, state=RejudgeState.QUEUED).update(
        state=RejudgeState.RUNNING, started_at=timezone.now()
    )
    if claimed != 1:
        return None
    rejudge = Rejudge.objects.get(pk=rejudge_id)
    try:
        cause = _judge_all(rejudge, model)
    except Exception as exc:  # never leave it running: say what went wrong
        log.exception("re-judge %s failed", rejudge_id)
        cause = f"error: {exc}"
    Rejudge.objects.filter(pk=rejudge.pk).update(state=RejudgeState.FINISHED, cause=cause, ended_at=timezone.now())
    rejudge.refresh_from_db()
    return rejudge


def rejudges_sweep_lost(*, now=None) -> list[str]:
    """Finish the re-judges whose worker died: running longer than every call could take.
    Their calls already made are in the ledger; the quota they held stays counted (never less)."""
    now = now or timezone.now()
    said = []
    for rejudge in Rejudge.objects.filter(state=RejudgeState.RUNNING, started_at__isnull=False):
        if now - rejudge.started_at < timedelta(seconds=CALL_SECONDS * (rejudge.items.count() + 1)):
            continue
        if Rejudge.objects.filter(pk=rejudge.pk, state=RejudgeState.RUNNING).update(
            state=RejudgeState.FINISHED, cause="error: worker lost", ended_at=now
        ):
            said.append(f"re-judge #{rejudge.pk}: worker lost")
    return said


def _judge_all(rejudge: Rejudge, model: ModelPort | None) -> str:
    try:
        model = model or model_for(rejudge)
    except (ScriptError, OSError) as exc:
        return f"judge error: {exc}"
    items = rejudge.items.select_related("run_pass__run").order_by("position")
    for item in items:
        if item.run_pass is None:
            continue  # its run was deleted meanwhile
        read = snapshots.judge_input(item.run_pass)
        if read is None:
            continue  # its snapshot was pruned meanwhile
        stop = _judge_one(rejudge, item, Candidate(item.run_pass, read[0], read[1]), model)
        if stop:
            return stop
    return "done"


def _judge_one(rejudge: Rejudge, item: RejudgeItem, candidate: Candidate, model: ModelPort) -> str | None:
    """One call, only if its worst case fits what the budget (and the quotas) leave; a cause
    when the re-judge must stop here."""
    messages = judge_messages(rejudge.until, candidate)
    left = rejudge.budget_tokens - rejudge.tokens_counted
    bound = judge_bound(rejudge.until, candidate)
    count = partial(counted_bound, model, _request(rejudge, candidate, messages, JUDGE_MAX_TOKENS), bound)
    # the byte bound that does not fit at all is counted exactly: it may
    sized = call_size(bound, left=left, ceiling=JUDGE_MAX_TOKENS, count=count, eager=False)
    if sized.max_tokens is None:
        return "budget exhausted"
    reservation = DirectReservation(model=rejudge.judge_model, target=rejudge.target, user_id=rejudge.requested_by_id)
    try:
        called = budgeted_call(
            model=model,
            request=lambda max_tokens, _started: _request(rejudge, candidate, messages, max_tokens),
            label="rejudge",
            sized=sized,
            count=count,
            reservation=reservation,
        )
    except quotas.QuotaRefused as refused:
        return f"quota: {refused}"
    except ModelError as exc:
        return f"judge error: {exc}"
    verdict = judging.parse_verdict(called.reply.text)
    _settle(rejudge, item, called, verdict, reservation)
    return None


def _request(rejudge: Rejudge, candidate: Candidate, messages: list, max_tokens: int) -> ModelRequest:
    return ModelRequest(
        model=rejudge.judge_model,
        system=judging.JUDGE_SYSTEM,
        messages=messages,
        tools=[],
        max_tokens=max_tokens,
        deadline=time.monotonic() + CALL_SECONDS,
        purpose=Phase.JUDGING,  # the scripted model answers it with the script's judge reply
        pass_number=candidate.run_pass.number,
        effort=rejudge.judge_effort if rejudge.judge_effort and takes_effort(rejudge.judge_model) else None,
    )


def _settle(rejudge: Rejudge, item: RejudgeItem, called: Called, verdict, reservation: DirectReservation) -> None:
    usage = called.reply.usage
    with transaction.atomic():
        money = reservation.settle(called.held, usage, purpose=PURPOSE, rejudge=rejudge)
        item.new_verdict, item.new_reason, item.tokens_counted = verdict.label, verdict.reason, usage.counted
        item.save(update_fields=["new_verdict", "new_reason", "tokens_counted"])
        changes = {"tokens_counted": F("tokens_counted") + usage.counted}
        if money is not None:
            rejudge.cost = (rejudge.cost or Decimal(0)) + money
            changes["cost"] = rejudge.cost
        Rejudge.objects.filter(pk=rejudge.pk).update(**changes)
    rejudge.tokens_counted += usage.counted


# -- the delta, for the review page and the CLI -----------------------------------------------------


@dataclass(frozen=True)
class Row:
    item: RejudgeItem
    label: VerdictLabel | None
    truth: str  # what the label says the right verdict was; "" without a label
    agrees: bool | None  # the new judge agrees with the people (None: no label, or not judged)


@dataclass(frozen=True)
class Delta:
    rows: list[Row]
    judged: int
    flips: int
    labelled: int  # judged passes with a person's label
    agree: int
    disagree: int

    def summary(self) -> str:
        return (
            f"{self.flips} of {self.judged} verdicts flip; with people: the new judge agrees on {self.agree}, "
            f"disagrees on {self.disagree} (of {self.labelled} labelled passes)"
        )


def _label_of(run_pass: Pass | None) -> VerdictLabel | None:
    if run_pass is None:
        return None
    try:
        return run_pass.label
    except VerdictLabel.DoesNotExist:
        return None


def truth_of(label: VerdictLabel, old_verdict: str) -> str:
    """A person said the old judge was right (the truth is its verdict) or wrong (the opposite)."""
    if label.judge_right:
        return old_verdict
    return "NO" if old_verdict == "YES" else "YES"


def rejudge_delta(rejudge: Rejudge) -> Delta:
    rows = []
    for item in rejudge.items.select_related("run_pass__run", "run_pass__label").order_by("position"):
        label = _label_of(item.run_pass)
        truth = truth_of(label, item.old_verdict) if label is not None else ""
        agrees = (item.new_verdict == truth) if truth and item.new_verdict else None
        rows.append(Row(item, label, truth, agrees))
    judged = [r for r in rows if r.item.new_verdict]
    return Delta(
        rows=rows,
        judged=len(judged),
        flips=sum(1 for r in judged if r.item.flipped),
        labelled=sum(1 for r in judged if r.label is not None),
        agree=sum(1 for r in judged if r.agrees is True),
        disagree=sum(1 for r in judged if r.agrees is False),
    )


def rejudges_for_change(change_request) -> list[Rejudge]:
    return list(Rejudge.objects.filter(change_request=change_request).order_by("-created_at", "-id"))
