"""A policy's budget ceilings applied to a run's plan (docs/policy.md): `budget.ceilings.pass`
lowers the per-pass budget, `budget.ceilings.run` the run's outer total, when the recipe asks
for more. The engine holds the plan's numbers as hard ceilings, so lowering the plan is enough.

Pure: no Django.
"""

from __future__ import annotations

import dataclasses

from budgets.plan import Plan, split_pass
from budgets.units import format_tokens
from policies.rules import Merged


def lower_plan(plan: Plan, policy: Merged) -> tuple[Plan, list[str]]:
    """The plan under the policy's ceilings, and a line for each change it made."""
    notes: list[str] = []
    per_pass = plan.per_pass.tokens
    if policy.pass_ is not None and per_pass > policy.pass_.tokens:
        notes.append(_note(policy.pass_.where, "pass budget", per_pass, policy.pass_.tokens))
        per_pass = policy.pass_.tokens
    outer = plan.outer_tokens
    if policy.run is not None:
        cap = policy.run.tokens
        if per_pass > cap:  # one pass may not spend more than the whole run
            notes.append(_note(policy.run.where, "pass budget", per_pass, cap))
            per_pass = cap
        if plan.loop_enabled and (outer == 0 or outer > cap):
            shown = format_tokens(outer) if outer else "no limit"
            notes.append(f"policy ({policy.run.where}): run total lowered {shown} -> {format_tokens(cap)}")
            outer = cap
    if per_pass == plan.per_pass.tokens:  # the pass as the recipe split it; the run's total alone lowered
        return (plan if outer == plan.outer_tokens else dataclasses.replace(plan, outer_tokens=outer)), notes
    ceiling = dataclasses.replace(plan.per_pass, tokens=per_pass)
    wrapup = plan.split.takeover is not None
    split = split_pass(ceiling, plan.takeover_when, wrapup, plan.split.floor)  # the recipe's own floor
    if split.worst.tokens > per_pass and split.takeover is not None:
        # the wrap-up leg's floor would take a pass past the policy's ceiling: no wrap-up then
        split = split_pass(ceiling, plan.takeover_when, False, plan.split.floor)
        notes.append(
            "policy: the wrap-up leg is dropped: its floor would take a pass past the ceiling "
            f"of {format_tokens(per_pass)}"
        )
    return dataclasses.replace(plan, per_pass=ceiling, outer_tokens=outer, split=split), notes


def _note(where: str, what: str, before: int, after: int) -> str:
    return f"policy ({where}): {what} lowered {format_tokens(before)} -> {format_tokens(after)}"
