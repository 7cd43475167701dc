"""A resolved plan as text: what `auto <kind> check` and `run --dry-run` print, and the models
it is priced on. Pure but for models_for, the one place the installation's default models apply,
and prices(), the price table in force (the built-in one with the admins' prices over it)."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import DatabaseError

from budgets.efforts import takes_effort
from budgets.lineup import generation_note
from budgets.plan import Allotment, Plan
from budgets.prices import PRICES, Price, counted_ceiling_cost, format_money, price_for
from budgets.units import format_duration, format_duration_go, format_tokens
from catalogue.spec import RecipeSpec
from spend.prices import FREE_MODELS, price_table

FREE = Price(Decimal(0), Decimal(0), Decimal(0), Decimal(0))


def models_for(spec: RecipeSpec) -> tuple[str, str]:
    """(executor, judge): the recipe's own models, else the installation's defaults."""
    return (spec.executor_model or settings.RYSH_EXECUTOR_MODEL, spec.judge or settings.RYSH_JUDGE_MODEL)


def wrapup_for(spec: RecipeSpec, executor: str) -> str:
    """The wrap-up leg's model: its own (`loop.do.budget.watch.model`), else the task leg's."""
    return spec.do.watch_model or executor


def model_notes(spec: RecipeSpec) -> list[str]:
    """What `auto check` and the run form's preview say about the models a recipe pins: their
    generation, and whether they are legacy (the installation's defaults follow the lineup)."""
    pinned = dict.fromkeys(m for m in (spec.executor_model, spec.do.watch_model, spec.judge) if m)
    return [note for model in pinned if (note := generation_note(model))]


def prices() -> dict[str, Price]:
    """The prices in force, the offline scripted model's (nothing) among them."""
    try:
        table = price_table()
    except DatabaseError:  # `auto check` of a file on a checkout whose database is not migrated yet
        table = PRICES
    return {**table, **dict.fromkeys(FREE_MODELS, FREE)}


def worst_case_money(plan: Plan, *, executor: str, judge: str, wrapup: str | None = None) -> Decimal | None:
    """The worst case priced at the dearest counted rate of the models that can spend it (the
    wrap-up leg's own model among them when the recipe has one)."""
    models = [executor] + ([wrapup] if wrapup and plan.split.takeover else []) + ([judge] if plan.judge_tokens else [])
    table = prices()
    costs = [counted_ceiling_cost(m, plan.worst_tokens, table) for m in models]
    return None if None in costs else max(costs)


def format_rate(amount: Decimal) -> str:
    """USD per million tokens as people write it: $3, $0.30, $0.075 (an admin's row keeps 4
    decimal places: not $3.0000)."""
    amount = amount.normalize()
    if amount == amount.to_integral_value():
        return f"${amount:.0f}"
    return f"${amount:.2f}" if amount.as_tuple().exponent >= -2 else f"${amount:f}"


def _short(a: Allotment) -> str:
    return f"{a.steps} steps / {format_duration(a.seconds)} / {format_tokens(a.tokens)}"


def floor_line(plan: Plan) -> str:
    """`floor:   100 steps / 5m / 1b under 50 steps / 1m / 60p; raised because ...`: the floor the
    wrap-up share is held to (the recipe's `floor:` or the built-in one) and whether it applied."""
    split = plan.split
    floor = split.floor
    line = f"floor:   {_short(floor.raise_to)} when the wrap-up share is under {_short(floor.trigger)}"
    thin = floor.thin_axes(split.raw_takeover)
    if not thin:
        return line + "; not needed: the share is above every trigger"
    return line + f"; raised because the wrap-up share is under the trigger on {', '.join(thin)}"


def _leg_model(model: str, effort: str | None) -> str:
    return model + (f", effort {effort}" if effort and takes_effort(model) else "")


def _allotment(a: Allotment) -> str:
    return f"{a.steps} steps  {format_duration_go(a.seconds)}  {a.tokens} tokens ({format_tokens(a.tokens)})"


def _gate_line(command: str, *, looping: bool) -> str:
    """The recipe's until_command (docs/coding-loops.md, "A test command as the gate")."""
    if looping:
        return f"gate:    `{command}` must exit 0 after each pass, besides the judge's YES"
    return f"gate:    `{command}` must exit 0 after the pass, or the run ends unfulfilled"


def plan_lines(spec: RecipeSpec, plan: Plan, *, executor: str, judge: str) -> list[str]:
    lines = plan.summary_lines()
    lines += [
        "",
        f"recipe:  {spec.target}  ({spec.path})",
        f"steps:   at most {plan.per_pass.steps} a pass, a reminder every {plan.interval}, "
        f"auto_continue={str(plan.auto_continue).lower()}",
    ]
    split = plan.split
    if split.takeover is None:
        lines.append(f"task     {_allotment(split.task)}  (no wrap-up leg)")
    else:
        lines.append(f"split at {plan.takeover_when}%:")
        lines.append(f"  task     {_allotment(split.task)}")
        wrap = f"  wrap-up  {_allotment(split.raw_takeover)}"
        if split.floored:
            wrap += f"  -> floored to {_allotment(split.takeover)}"
        lines.append(wrap)
        lines.append(f"  pass worst case  {_allotment(split.worst)}")
        lines.append(floor_line(plan))
        lines.append(f"models:  task {_leg_model(executor, spec.task_effort)}")
        lines.append(f"         wrap-up {_leg_model(wrapup_for(spec, executor), spec.wrapup_effort)}")
    if plan.judge_tokens:
        lines.append(
            f"judge:   {_leg_model(judge, spec.loop_while.effort)}, at most {plan.judge_tokens} tokens a verdict"
        )
    if spec.until_command:
        lines.append(_gate_line(spec.until_command, looping=plan.loop_enabled))
    wrapup = wrapup_for(spec, executor) if split.takeover is not None else executor
    money = worst_case_money(plan, executor=executor, judge=judge, wrapup=wrapup)
    on = executor if wrapup == executor else f"{executor} and {wrapup}"
    lines.append(
        f"worst case: {plan.worst_tokens} tokens ({format_tokens(plan.worst_tokens)}) over "
        f"{plan.passes} pass{'es' if plan.passes != 1 else ''}, "
        f"at most {format_money(money)} on {on}, "
        f"wall clock at most {format_duration_go(plan.worst_seconds)}"
    )
    price = price_for(executor, prices())
    if price is not None:
        lines.append(
            f"  cache reads are not counted against the budget; they are billed on top at {format_rate(price.cache_read)}/M tokens"
        )
    return lines
