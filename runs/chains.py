"""Reads about `on_success` chains (docs/chains.md): before a chain's first run starts, whether
the whole chain's worst case fits the quotas that count it (the start is refused when a later
link would not fit, naming it); and after, the runs of one chain in order, for the run page,
the API and `auto <kind> show`."""

from __future__ import annotations

from django.db import DatabaseError

from budgets.plan import Plan
from budgets.prices import format_money
from budgets.quota import from_micros, to_micros
from budgets.units import format_tokens
from catalogue.chain_checks import chain_cost, chain_for, chain_lines
from catalogue.chains import MAX_DEPTH, ChainCost, first_over
from catalogue.spec import RecipeSpec
from policies.selectors import PolicyBroken, policy_for_run
from runs.models import Run
from spend.models import Quota
from spend.quotas import applies, current, quotas_for

# the causes that start the next recipe: a loop the judge said yes to, a plain run that ended well
CHAINING_CAUSES = ("fulfilled", "done")


def chain_quota_refusal(spec: RecipeSpec, *, user_id: int | None) -> str | None:
    """Why the first run of `spec`'s chain must not start: a quota the chain's first recipe
    fits but a later one, added to those before it, would not (its worst case). None: it fits,
    or the recipe chains nothing. The first recipe alone not fitting is any run's case: it may
    pause on the quota, it is not refused (docs/spend.md)."""
    if spec.on_success is None:
        return None
    try:
        cost = chain_cost(spec, chain_for(spec), shape=policed)
        quotas = _quotas(cost, user_id)
    except DatabaseError:
        return None
    for quota in quotas:
        if (said := _over(quota, cost, user_id)) is not None:
            return said
    return None


def policed(plan: Plan) -> Plan:
    """A link's plan as its run would start: under the team's policy ceilings (docs/policy.md).
    A policy that does not parse refuses every start anyway; the plan is then shown as written."""
    try:
        return policy_for_run(plan)[0]
    except PolicyBroken:
        return plan


def _quotas(cost: ChainCost, user_id: int | None) -> list[Quota]:
    found = {}
    for link in cost.links:
        for quota in quotas_for(target=link.target, user_id=user_id):
            found.setdefault(quota.pk, quota)
    return [current(quota) for quota in found.values()]


def _over(quota: Quota, cost: ChainCost, user_id: int | None) -> str | None:
    """What a quota says of the chain: the first later link whose running total passes what it
    has left, with the numbers; None when every link fits."""
    counted = [applies(quota, target=link.target, user_id=user_id) for link in cost.links]
    standing = quota.standing
    if quota.tokens is not None:
        tokens = [link.tokens if on else 0 for link, on in zip(cost.links, counted, strict=True)]
        index = first_over(tokens, standing.tokens_left)
        if index:
            return _refusal(quota, cost, counted, index, f"{format_tokens(standing.tokens_left)} tokens", "tokens")
    if quota.micros is not None and cost.money is not None:
        micros = [to_micros(link.money) if on else 0 for link, on in zip(cost.links, counted, strict=True)]
        index = first_over(micros, standing.micros_left)
        if index:
            return _refusal(quota, cost, counted, index, format_money(from_micros(standing.micros_left)), "money")
    return None


def _refusal(quota: Quota, cost: ChainCost, counted: list[bool], index: int, left: str, axis: str) -> str:
    link = cost.links[index]
    upto = [(each, on) for each, on in zip(cost.through(index).links, counted, strict=False) if on]

    def amount(each) -> str:
        return f"{format_tokens(each.tokens)} tokens" if axis == "tokens" else format_money(each.money)

    parts = " + ".join(f"{each.target} {amount(each)}" for each, _ in upto)
    total = (
        f"{format_tokens(sum(each.tokens for each, _ in upto))} tokens"
        if axis == "tokens"
        else format_money(sum(each.money for each, _ in upto))
    )
    return (
        f"{cost.links[0].target} is not started: its on_success chain would not fit {quota.name}, which has "
        f"{left} left; by {link.target} (link {index + 1} of {len(cost.links)}) the chain's worst case is "
        f"{parts} = {total}. Raise the quota, give the recipes smaller budgets, or wait for the quota's window"
    )


def chain_quota_lines(spec: RecipeSpec, *, user_id: int | None) -> list[str]:
    """The chain's lines for a dry run or `auto check`: the chain, its worst case, and whether
    the quotas that count it let it finish."""
    lines = chain_lines(spec, shape=policed)
    if lines:
        refusal = chain_quota_refusal(spec, user_id=user_id)
        lines.append(f"chain quota: {refusal}" if refusal else "chain quota: every link fits what the quotas have left")
    return lines


# -- the runs of one chain ---------------------------------------------------------------------------


def run_chain(run: Run) -> list[Run]:
    """The runs of `run`'s chain in order, from the one whose success started the rest to the last
    started so far; [run] alone when it is in no chain. Bounded: a chain is at most 9 runs."""
    if not run.chain_parent_id and not run.chain_children.exists():
        return [run]
    first, seen = run, {run.pk}
    while first.chain_parent_id and first.chain_parent_id not in seen and len(seen) <= MAX_DEPTH + 1:
        first = Run.objects.get(pk=first.chain_parent_id)
        seen.add(first.pk)
    runs = [first]
    while len(runs) <= MAX_DEPTH + 1:
        following = chain_next(runs[-1])
        if following is None or following.pk in {r.pk for r in runs}:
            break
        runs.append(following)
    return runs


def chain_next(run: Run) -> Run | None:
    """The run `run`'s success started, if any (its resume, when it was cancelled and resumed:
    the newest run of that link)."""
    return run.chain_children.order_by("-id").first()


def chain_context(run: Run) -> dict:
    """What the run page's chain partial shows: the chain's runs, the run before and after."""
    chain = run_chain(run)
    index = next((i for i, r in enumerate(chain) if r.pk == run.pk), None)
    if index is None:  # a second run one success started (two followed it at once): alone
        chain, index = [run], 0
    return {
        "chain": chain,
        "chain_before": chain[index - 1] if index else None,
        "chain_after": chain[index + 1] if index + 1 < len(chain) else None,
    }


def chain_text(runs: list[Run]) -> str:
    """`task/a #12 (fulfilled) -> task/b #13 (running pass)`: what `auto show` prints."""
    return " -> ".join(f"{r.target} #{r.pk} ({r.cause or r.state_label})" for r in runs)
