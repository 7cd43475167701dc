"""Recipe budget fields -> the resolved plan (docs/running-loops.md). Pure: no Django.

The plan is what a job is armed with: the per-pass ceiling, the split between
the task leg and the wrap-up leg (the recipe's `takeover_prompt`) with rysh's floors, the outer
ceilings after the while/do algebra, and the worst case of the whole job.
The worst case is a bound the engine must hold, so everything here is integer
arithmetic on tokens and whole seconds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from budgets.units import BOOK, PAGE, format_duration, format_duration_go, format_tokens

if TYPE_CHECKING:  # the plan reads a recipe's fields; it never needs the parser
    from catalogue.spec import DoSpec, WhileSpec

# rysh's floor: a wrap-up share under any trigger is raised, on every axis, to the floor. These
# are the built-in values; a recipe's `loop.do.budget.watch.floor` sets its own (Floor).
FLOOR_TRIGGER_STEPS, FLOOR_TRIGGER_SECONDS, FLOOR_TRIGGER_TOKENS = 50, 60, 60 * PAGE
FLOOR_STEPS, FLOOR_SECONDS, FLOOR_TOKENS = 100, 5 * 60, 1 * BOOK

# The judge reads the newest result (capped) against `until`. A token never
# covers less than one byte, so bytes bound tokens; the judge module keeps its
# own instructions under JUDGE_FRAME_BYTES and asks for JUDGE_MAX_TOKENS.
JUDGE_RESULT_CAP_BYTES = 48 * 1024
JUDGE_FRAME_BYTES = 2048
JUDGE_MAX_TOKENS = 256


@dataclass(frozen=True)
class Allotment:
    """What one leg (or pass) may spend, on each axis."""

    steps: int
    seconds: int
    tokens: int

    def __add__(self, other: Allotment) -> Allotment:
        return Allotment(self.steps + other.steps, self.seconds + other.seconds, self.tokens + other.tokens)


@dataclass(frozen=True)
class Floor:
    """The wrap-up share's floor: a share under any `trigger` axis is raised, on every axis, to
    at least `raise_to` (docs/running-loops.md, "The floor")."""

    trigger: Allotment = Allotment(FLOOR_TRIGGER_STEPS, FLOOR_TRIGGER_SECONDS, FLOOR_TRIGGER_TOKENS)
    raise_to: Allotment = Allotment(FLOOR_STEPS, FLOOR_SECONDS, FLOOR_TOKENS)

    def thin_axes(self, share: Allotment) -> list[str]:
        """The axes of `share` under their trigger: "steps", "duration", "tokens"."""
        below = (
            share.steps < self.trigger.steps,
            share.seconds < self.trigger.seconds,
            share.tokens < self.trigger.tokens,
        )
        return [axis for axis, thin in zip(AXES, below) if thin]


AXES = ("steps", "duration", "tokens")
DEFAULT_FLOOR = Floor()


@dataclass(frozen=True)
class Split:
    task: Allotment
    takeover: Allotment | None  # the wrap-up leg's share (named as the stored plan names it); None: no wrap-up
    raw_takeover: Allotment | None  # the takeover share before floors
    floored: bool
    floor: Floor = DEFAULT_FLOOR  # the floor the share was held to

    @property
    def worst(self) -> Allotment:
        """A pass's worst case: the floor may take it past the pass ceiling, on purpose."""
        return self.task if self.takeover is None else self.task + self.takeover


@dataclass(frozen=True)
class Plan:
    loop_enabled: bool
    passes: int
    per_pass: Allotment
    takeover_when: int
    interval: int
    auto_continue: bool
    outer_tokens: int  # 0: no outer limit on tokens
    outer_seconds: int  # 0: no outer limit on wall clock
    split: Split
    judge_tokens: int  # bound of one judge call; 0 without a loop
    warnings: tuple[str, ...]

    @property
    def pass_tokens_worst(self) -> int:
        return self.split.worst.tokens + self.judge_tokens

    @property
    def worst_tokens(self) -> int:
        """Every token the job can count, judge included, unattended."""
        total = self.passes * self.pass_tokens_worst
        return min(total, self.outer_tokens) if self.outer_tokens else total

    @property
    def worst_seconds(self) -> int:
        """Model-and-tool wall clock; the judge's calls and time awaiting a person are not in it."""
        total = self.passes * self.split.worst.seconds
        return min(total, self.outer_seconds) if self.outer_seconds else total

    def granted(self, grant: Grant) -> Plan:
        """The plan with a grant's extra passes, outer tokens and outer time (docs/spend.md)."""
        if grant.empty:
            return self
        return dataclasses.replace(
            self,
            passes=self.passes + grant.passes,
            outer_tokens=self.outer_tokens + grant.tokens if self.outer_tokens else 0,
            outer_seconds=self.outer_seconds + grant.seconds if self.outer_seconds else 0,
        )

    def summary_lines(self) -> list[str]:
        return summary_lines(
            loop_enabled=self.loop_enabled,
            passes=self.passes,
            tokens=self.per_pass.tokens,
            seconds=self.per_pass.seconds,
            takeover_when=self.takeover_when if self.split.takeover is not None else None,
            outer_tokens=self.outer_tokens,
            outer_seconds=self.outer_seconds,
        )


@dataclass(frozen=True)
class Grant:
    """What operators added to a finished run's outer ceilings, all grants together."""

    passes: int = 0
    tokens: int = 0
    seconds: int = 0

    @property
    def empty(self) -> bool:
        return not (self.passes or self.tokens or self.seconds)

    def __add__(self, other: Grant) -> Grant:
        return Grant(self.passes + other.passes, self.tokens + other.tokens, self.seconds + other.seconds)

    def describe(self) -> str:
        parts = [f"+{self.passes} pass{'es' if self.passes != 1 else ''}"] if self.passes else []
        parts += [f"+{format_tokens(self.tokens)} outer total"] if self.tokens else []
        parts += [f"+{format_duration(self.seconds)} outer time"] if self.seconds else []
        return ", ".join(parts) or "nothing"


# the causes a grant can turn into a continuation: the run stopped at an outer ceiling
GRANTABLE_CAUSES = ("budget exhausted", "the loop's time cap elapsed")
PASS_CAP_CAUSE_PREFIX = "unfulfilled: the "


def is_grantable(cause: str) -> bool:
    """The run ended at an outer ceiling: budget exhausted, the pass cap, the loop's time cap."""
    return cause in GRANTABLE_CAUSES or (cause.startswith(PASS_CAP_CAUSE_PREFIX) and "pass cap" in cause)


def grant_refusal(plan: Plan, base: Plan, cause: str, already: Grant, extra: Grant, max_factor: float) -> str | None:
    """Why this grant cannot be given to a run that ended with `cause`, or None.

    `base` is the recipe's own plan (no grant), `plan` the run's current one. The bound: all
    grants together may add at most `max_factor` times the recipe's own outer ceilings (passes,
    outer total, outer time); an axis the recipe leaves unlimited cannot be granted.
    """
    if not is_grantable(cause):
        return (
            f"only a run that ended at an outer ceiling (budget exhausted, the pass cap, the loop's time cap) "
            f"can be granted more; this one ended: {cause or 'not yet'}"
        )
    if extra.empty:
        return "a grant needs extra passes, an extra outer total or extra outer time"
    if min(extra.passes, extra.tokens, extra.seconds) < 0:
        return "a grant only adds: passes, tokens and time must not be negative"
    if not plan.loop_enabled:
        return "this run has no loop: there is no outer ceiling to raise (start a new run instead)"
    if extra.tokens and not plan.outer_tokens:
        return "this run's loop has no outer token total to raise"
    if extra.seconds and not plan.outer_seconds:
        return "this run's loop has no outer time to raise"
    total = already + extra
    limits = (
        ("passes", total.passes, int(base.passes * max_factor), str),
        ("outer total", total.tokens, int(base.outer_tokens * max_factor), format_tokens),
        ("outer time", total.seconds, int(base.outer_seconds * max_factor), format_duration),
    )
    for what, asked, limit, show in limits:
        if asked > limit:
            return (
                f"grants may add at most {show(limit)} {what} to this recipe's runs "
                f"(RYSH_GRANT_MAX_PERCENT={max_factor * 100:g}: {max_factor * 100:g}% of the recipe's own); "
                f"this one would add {show(asked)} in all"
            )
    still = plan.granted(extra)
    if cause == "budget exhausted" and not extra.tokens:
        return "the run ran out of its outer total: grant tokens (--total) for it to go on"
    if cause == "the loop's time cap elapsed" and not extra.seconds:
        return "the run used its outer time: grant time (--time) for it to go on"
    if cause.startswith(PASS_CAP_CAUSE_PREFIX) and still.passes <= plan.passes:
        return "the run used all its passes: grant passes (--passes) for it to go on"
    return None


def summary_lines(
    *,
    loop_enabled: bool,
    passes: int,
    tokens: int,
    seconds: int,
    takeover_when: int | None,
    outer_tokens: int,
    outer_seconds: int,
) -> list[str]:
    """The three lines rysh prints for a resolved loop, byte for byte. `takeover_when` None: the
    recipe has no wrap-up prompt, so there is no takeover to print (the percentage would mean
    nothing: a budget stop is a plain stop)."""
    takeover = f"  takeover={takeover_when}" if takeover_when is not None else ""
    return [
        f"loop enabled={str(loop_enabled).lower()}  maxIter={passes}",
        f"perPass: tokens={tokens}  duration={format_duration_go(seconds)}{takeover}",
        f"outer:   tokensTotal={outer_tokens}  duration={format_duration_go(outer_seconds)}",
    ]


def split_pass(ceiling: Allotment, takeover_when: int, has_takeover: bool, floor: Floor = DEFAULT_FLOOR) -> Split:
    """Task gets ⌊ceiling × P/100⌋ on each axis, the takeover the rest, then the floor."""
    if not has_takeover:
        return Split(task=ceiling, takeover=None, raw_takeover=None, floored=False, floor=floor)
    task = Allotment(*(value * takeover_when // 100 for value in _axes(ceiling)))
    raw = Allotment(*(c - t for c, t in zip(_axes(ceiling), _axes(task))))
    takeover = floor_takeover(raw, floor)
    return Split(task=task, takeover=takeover, raw_takeover=raw, floored=takeover != raw, floor=floor)


def floor_takeover(share: Allotment, floor: Floor = DEFAULT_FLOOR) -> Allotment:
    """Below any trigger, every axis is raised to at least its floor; axes above stay."""
    if not floor.thin_axes(share):
        return share
    up = floor.raise_to
    return Allotment(max(share.steps, up.steps), max(share.seconds, up.seconds), max(share.tokens, up.tokens))


def redistribute(outer: int | None, per_pass: int, passes: int, *, unit: int = 1) -> tuple[int, int]:
    """The while/do algebra on one axis -> (per-pass value, outer ceiling or 0).

    A total above one pass is authoritative: split evenly in whole `unit`s and
    kept as the outer ceiling. A total that cannot fund even one pass, or none,
    disables that axis rather than pretending to limit it.
    """
    if outer is None or outer <= per_pass:
        return per_pass, 0
    # At least one unit, so a tiny total never arms a pass that cannot take a step;
    # the outer ceiling still holds the job to the total.
    return max(unit, outer // passes // unit * unit), outer


def judge_bound(until: str) -> int:
    return JUDGE_FRAME_BYTES + len(until.encode()) + JUDGE_RESULT_CAP_BYTES + JUDGE_MAX_TOKENS


def resolve(do: DoSpec, loop_while: WhileSpec) -> Plan:
    warnings: list[str] = []
    looping = loop_while.runs_loop
    tokens, seconds = do.budget_size, do.max_duration
    outer_tokens = outer_seconds = 0
    if not loop_while.until:
        warnings.append("loop cannot run (no exit condition): without until, one pass runs")
    elif not looping:
        warnings.append("loop disabled (while.enabled: false): one pass on its own budget")
    else:
        tokens, outer_tokens = redistribute(loop_while.budget, tokens, loop_while.max_iterations, unit=PAGE)
        seconds, outer_seconds = redistribute(loop_while.max_duration, seconds, loop_while.max_iterations)
        warnings += _disabled_axes(loop_while, do, outer_tokens, outer_seconds)
    ceiling = Allotment(do.max_iterations, seconds, tokens)
    split = split_pass(ceiling, do.takeover_when, bool(do.takeover_prompt), do.floor)
    warnings += _split_warnings(split, ceiling)
    return Plan(
        loop_enabled=looping,
        passes=loop_while.max_iterations if looping else 1,
        per_pass=ceiling,
        takeover_when=do.takeover_when,
        interval=do.interval,
        auto_continue=do.auto_continue,
        outer_tokens=outer_tokens,
        outer_seconds=outer_seconds,
        split=split,
        judge_tokens=judge_bound(loop_while.until or "") if looping else 0,
        warnings=tuple(warnings),
    )


def _disabled_axes(loop_while: WhileSpec, do: DoSpec, outer_tokens: int, outer_seconds: int) -> list[str]:
    notes = []
    if not outer_tokens:
        why = (
            "loop.while.budget is not set"
            if loop_while.budget is None
            else f"loop.while.budget {format_tokens(loop_while.budget)} does not exceed one pass "
            f"({format_tokens(do.budget_size)})"
        )
        notes.append(f"tokens DISABLED: {why}; the loop has no outer token limit")
    if not outer_seconds:
        why = (
            "loop.while.max_duration is not set"
            if loop_while.max_duration is None
            else f"loop.while.max_duration {format_duration(loop_while.max_duration)} does not "
            f"exceed one pass ({format_duration(do.max_duration)})"
        )
        notes.append(f"duration DISABLED: {why}; the loop has no outer clock")
    return notes


def _split_warnings(split: Split, ceiling: Allotment) -> list[str]:
    if split.takeover is None:
        return ["no takeover_prompt: a budget stop is a plain stop, with no wrap-up leg"]
    if split.floored and split.worst != ceiling:
        return [
            "wrap-up share is below rysh's floor and was raised: a pass may spend past its "
            "ceiling, up to the worst case shown, so the landing is not clipped"
        ]
    return []


def _axes(a: Allotment) -> tuple[int, int, int]:
    return (a.steps, a.seconds, a.tokens)
