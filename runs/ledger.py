"""The ledger: reserve before a model call, settle after it (and settle what a dead worker left).

A reservation is the call's *pending* Step row, holding its upper bound (input bound +
max_tokens), committed before the call. From then on the job counts it: its spend is the
run's totals (settled calls: always equal to the sum of its ledger entries) plus the
reservations of its pending steps. The engine, the job's only spender, counts it in memory
at once, and any reader sees it on the step (the dashboard shows it as "reserved for the call
in flight"). Settling writes the step's real usage, its one ledger entry and the run's totals
in the caller's transaction. A worker that dies mid-call leaves the step pending: whoever
finds it settles it at its reservation, once (the status flip is the claim), so the ceiling
holds and no token is counted twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import nullcontext
from datetime import datetime
from decimal import Decimal

from django.db import connection, transaction
from django.db.models import F, Q, Sum

from agents.ports import Usage
from budgets.guard import JobSpent, LastCall
from budgets.prices import cost
from runs.models import LedgerEntry, Pass, Phase, Run, Step, StepStatus
from runs.signals import budget_crossed
from spend import quotas
from spend.models import Quota, Scope
from spend.prices import price_table

COST_PLACES = Decimal("0.000001")  # Run.cost keeps six decimal places
BUDGET_MARKS = (50, 80, 95)  # shares of the job's outer total that notifications announce


class Ledger:
    """One run's tokens, for the engine that drives it."""

    def __init__(self, run: Run):
        self.run = run
        self._last: tuple[int, LastCall | None] | None = None  # (pass id, its last settled call)
        self._count: tuple[int, LastCall] | None = None  # (pass id, an exact count since then)
        self._no_quota = False  # the last settle read that no spend quota existed then

    def spent(self) -> JobSpent:
        """What the job has spent; between calls nothing is in flight, so the settled totals."""
        return JobSpent(tokens=self.run.tokens_counted, seconds=self.run.seconds_used)

    def no_quota_since_settle(self) -> bool:
        """Whether the settle just before this call read that no quota existed (in its UPDATE's
        RETURNING): the next call's quota read can be skipped, as if it had been made a moment
        earlier. Once only: any later call reads the quotas again."""
        said, self._no_quota = self._no_quota, False
        return said

    def last_call(self, run_pass: Pass) -> LastCall | None:
        """The previous settled call of this conversation, for the incremental bound: kept from
        the last settle, read once when a pass is picked up again."""
        if self._last is None or self._last[0] != run_pass.pk:
            self._last = (run_pass.pk, _last_settled_call(run_pass))
        settled = self._last[1]
        if self._count and self._count[0] == run_pass.pk:
            counted = self._count[1]
            if settled is None or counted.message_count >= settled.message_count:
                return counted  # an exact count of more of the conversation: the better base
        return settled

    def note_count(self, run_pass: Pass, counted: LastCall) -> None:
        """An exact count (margin included) of the first `message_count` turns as they are now:
        the base of the next bound until a call settles or a turn already counted changes."""
        self._count = (run_pass.pk, counted)

    def forget_count(self) -> None:
        """A counted turn changed (the wrap-up prompt joined the last user turn)."""
        self._count = None

    def reserve(
        self,
        run_pass: Pass,
        *,
        leg: str,
        model: str,
        max_tokens: int,
        bound: int,
        message_count: int,
        applying: list | None = None,
        **marks,
    ) -> Step:
        """Before a call: its pending step and its holds on the quotas that apply, committed
        together before the call is made; spend.quotas.QuotaRefused when a quota has no room
        for it (then nothing is written). `applying`: the quotas that apply, if already read."""
        if applying is None:  # the quotas the engine just read to fit the call, else read them now
            applying = quotas.quotas_for(target=self.run.target, user_id=self.run.charged_to_id)
        step = Step(
            run_pass=run_pass,
            number=run_pass.steps_total + 1,
            leg=leg,
            model=model,
            max_tokens=max_tokens,
            reserved_tokens=bound + max_tokens,
            message_count=message_count,
            **marks,  # a sub-agent's step: which one, and the step that started it
        )
        with transaction.atomic() if applying else nullcontext():  # one INSERT when no quota applies
            step.save(force_insert=True)
            quotas.take(step, applying, model=model, tokens=bound + max_tokens)
        run_pass.steps_total += 1
        return step

    def settle(self, step: Step, usage: Usage, *, clock_seconds: float) -> None:
        """Inside the caller's transaction: the call's real usage onto its step, the step's
        ledger entry and the run's totals (which never held the reservation: nothing to undo)."""
        step.status, step.counted_tokens = StepStatus.DONE, usage.counted
        step.input_tokens, step.output_tokens = usage.input_tokens, usage.output_tokens
        step.cache_read_tokens, step.cache_write_tokens = usage.cache_read_tokens, usage.cache_write_tokens
        step.save()
        entry = self._entry(step, usage, estimated=False)
        quotas.settle(step, tokens=usage.counted, cost=entry.cost)
        self._add_to_run(usage, counted=usage.counted, seconds=clock_seconds, model=step.model, quotas_now=True)
        if step.leg != Phase.JUDGING and not step.agent:  # a sub-agent's call is of its own conversation
            self._last = (step.run_pass_id, LastCall(context=usage.context, message_count=step.message_count))
            if self._count and self._count[1].message_count <= step.message_count:
                self._count = None  # the call's own usage is exact and newer than that count

    def settle_reserved(self, step: Step, status: str, seconds: float) -> None:
        """Interrupted: what the call cost is unknown, so its full reservation is counted."""
        step.status, step.counted_tokens = status, step.reserved_tokens
        step.duration_ms = int(seconds * 1000)
        with transaction.atomic():
            step.save()
            _keep_step_number(step)
            self._entry(step, Usage(), estimated=True)
            quotas.settle(step)  # at the reservation, like the run's own count
            self._add_to_run(Usage(), counted=step.reserved_tokens, seconds=seconds, model=step.model)

    def settle_failed(self, step: Step, message: str, seconds: float) -> None:
        """The API refused or never answered: failed requests are not billed."""
        step.status, step.counted_tokens, step.stop_reason = StepStatus.DONE, 0, "error"
        step.text, step.duration_ms = message, int(seconds * 1000)
        with transaction.atomic():
            step.save()
            _keep_step_number(step)
            quotas.settle(step, tokens=0, cost=None)
            self._add_to_run(Usage(), counted=0, seconds=seconds, model=step.model)

    def _entry(self, step: Step, usage: Usage, *, estimated: bool) -> LedgerEntry:
        return LedgerEntry.objects.create(
            run=self.run,
            step=step,
            pass_number=step.run_pass.number,
            purpose=step.leg,
            model=step.model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            counted_tokens=step.counted_tokens,
            estimated=estimated,
            cost=usage_cost(step.model, usage),
            charged_to_id=self.run.charged_to_id,
        )

    def _add_to_run(self, usage: Usage, *, counted: int, seconds: float, model: str, quotas_now: bool = False) -> None:
        """One UPDATE adds to the run's totals in the database (a person's control written
        meanwhile is never overwritten) and reads back, with RETURNING, the totals and that
        control: exact whoever else wrote the row, and no second query. With `quotas_now` it
        also reads whether any quota exists (see no_quota_since_settle)."""
        money = usage_cost(model, usage)
        fresh = add_to_run(
            self.run.pk,
            {
                "tokens_counted": counted,
                "seconds_used": seconds,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
            },
            money,
            quotas_now=quotas_now,
        )
        self._no_quota = quotas_now and not fresh.pop("quotas")
        for name, value in fresh.items():
            setattr(self.run, name, value)
        if money is not None:
            self.run.cost = ((self.run.cost or Decimal(0)) + money).quantize(COST_PLACES)
        if counted:
            _announce_marks(self.run, before=fresh["tokens_counted"] - counted)


def add_to_run(run_id: int, deltas: dict[str, int | float], money: Decimal | None, *, quotas_now: bool = False) -> dict:
    """UPDATE … SET total = total + delta … RETURNING the totals and the control (SQLite 3.35+ and
    PostgreSQL both return from an UPDATE; the ORM's update() only counts rows), and with
    `quotas_now` whether any spend quota exists (`quotas`: a subquery, no statement of its own)."""
    quote = connection.ops.quote_name
    column = {name: quote(Run._meta.get_field(name).column) for name in [*deltas, "cost", "control"]}
    sets = [f"{column[name]} = {column[name]} + %s" for name in deltas]
    params: list = list(deltas.values())
    if money is not None:
        sets.append(f"{column['cost']} = CAST(COALESCE({column['cost']}, 0) + %s AS NUMERIC)")
        params.append(money)
    returned = [*deltas, "control"]
    said = [column[n] for n in returned]
    if quotas_now:
        returned.append("quotas")
        said.append(f"EXISTS (SELECT 1 FROM {quote(Quota._meta.db_table)})")
    sql = (
        f"UPDATE {quote(Run._meta.db_table)} SET {', '.join(sets)} "
        f"WHERE {quote(Run._meta.pk.column)} = %s RETURNING {', '.join(said)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, run_id])
        return dict(zip(returned, cursor.fetchone()))


def _announce_marks(run: Run, *, before: int) -> None:
    """budget_crossed for each mark this settle passed; receivers keep each once per run."""
    total = (run.plan or {}).get("worst_tokens") or 0
    for percent in BUDGET_MARKS if total > 0 else ():
        if before * 100 < percent * total <= run.tokens_counted * 100:
            budget_crossed.send(sender=Run, run=run, percent=percent)  # notifications listen


def settle_pending_steps(run: Run) -> int:
    """A worker died mid-call: its pending steps are counted at their reservation, once."""
    settled = 0
    for step in Step.objects.filter(run_pass__run=run, status=StepStatus.PENDING).select_related("run_pass"):
        with transaction.atomic():
            if (
                Step.objects.filter(pk=step.pk, status=StepStatus.PENDING).update(
                    status=StepStatus.LOST, counted_tokens=F("reserved_tokens")
                )
                != 1
            ):
                continue  # settled by someone else meanwhile
            step.refresh_from_db()
            _, created = LedgerEntry.objects.get_or_create(
                step=step,
                defaults=dict(
                    run=run,
                    pass_number=step.run_pass.number,
                    purpose=step.leg,
                    model=step.model,
                    counted_tokens=step.reserved_tokens,
                    estimated=True,
                ),
            )
            quotas.settle(step)  # its quota holds too, at the reservation
            if created:  # one entry per step: the run's totals follow the entry, never twice
                Run.objects.filter(pk=run.pk).update(tokens_counted=F("tokens_counted") + step.reserved_tokens)
                run.tokens_counted += step.reserved_tokens  # callers go on with this object
            _keep_step_number(step)
            settled += 1
    return settled


def _keep_step_number(step: Step) -> None:
    """A step the checkpoint never saw (interrupted or lost): the pass still numbers it, so the
    next step of a continued pass takes the next number."""
    Pass.objects.filter(pk=step.run_pass_id, steps_total__lt=step.number).update(steps_total=step.number)


def _last_settled_call(run_pass: Pass) -> LastCall | None:
    last = (
        run_pass.steps.filter(status=StepStatus.DONE, agent="")
        .exclude(leg=Phase.JUDGING)
        .exclude(stop_reason="error")
        .order_by("-number")
        .first()
    )
    if last is None:
        return None
    return LastCall(
        context=last.input_tokens + last.cache_read_tokens + last.cache_write_tokens, message_count=last.message_count
    )


def usage_cost(model: str, usage: Usage) -> Decimal | None:
    """Priced by the table in force: the built-in one with the admins' prices over it."""
    return cost(
        model,
        input=usage.input_tokens,
        output=usage.output_tokens,
        cache_read=usage.cache_read_tokens,
        cache_write=usage.cache_write_tokens,
        cache_write_1h=usage.cache_write_1h_tokens,
        table=price_table(),
    )


def ledger_direct_entry(
    *, usage: Usage, model: str, purpose: str, held, charged_to_id: int | None, run=None, rejudge=None, pass_number=0
) -> Decimal | None:
    """A call made outside a run's steps (a re-judge's, an eval case's rubric), counted in the
    ledger at its real usage and settled against the quotas that held its reservation; its money
    as the entry keeps it (None: unpriced). Call it inside the caller's transaction."""
    money = usage_cost(model, usage)
    if money is not None:
        money = money.quantize(COST_PLACES)
    LedgerEntry.objects.create(
        run=run,
        rejudge=rejudge,
        pass_number=pass_number,
        purpose=purpose,
        model=model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        counted_tokens=usage.counted,
        cost=money,
        charged_to_id=charged_to_id,
    )
    quotas.settle_direct(held, tokens=usage.counted, cost=money)
    return money


def spent_rows(quota: Quota, start: datetime) -> Iterable[dict]:
    """The ledger in `quota`'s scope since `start`, summed by model and by whether the calls were
    counted at their reservation: what spend.quotas.spent_since prices (its port to the ledger)."""
    entries = LedgerEntry.objects.filter(created_at__gte=start)
    if quota.scope == Scope.RECIPE:  # a re-judge's calls (run=None) count for the recipe re-judged
        entries = entries.filter(Q(run__target=quota.target) | Q(run__isnull=True, rejudge__target=quota.target))
    elif quota.scope == Scope.USER:  # the person each call was charged to (a run's or a re-judge's)
        entries = entries.filter(charged_to_id=quota.user_id)
    return entries.values("model", "estimated").annotate(tokens=Sum("counted_tokens"), cost=Sum("cost"))
