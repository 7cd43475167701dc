"""The model lineup, pure: each model's family, version and generation, and which are legacy.
One table beside budgets.prices: update both when Anthropic's lineup changes.

A generation is a major version (4.x, 5.x); the current generation's models are current, the
older ones legacy. The newer (5.x) tokenizer counts about 30% more tokens for the same text,
so a recipe whose model changes generation spends its budget differently.
"""

from __future__ import annotations

from dataclasses import dataclass

from budgets.prices import DATED

CURRENT_GENERATION = 5
TOKENIZER_GROWTH_PERCENT = 30  # the 5.x tokenizer counts about this much more for the same text


@dataclass(frozen=True)
class Model:
    id: str
    family: str  # Opus, Sonnet, Haiku, Fable, Mythos
    version: tuple[int, ...]  # (5, 5)

    @property
    def generation(self) -> int:
        return self.version[0]

    @property
    def legacy(self) -> bool:
        return self.generation < CURRENT_GENERATION

    @property
    def name(self) -> str:
        return f"{self.family} {'.'.join(map(str, self.version))}"


def _m(model_id: str, family: str, *version: int) -> Model:
    return Model(model_id, family, version)


LINEUP: tuple[Model, ...] = (
    _m("claude-fable-5-2", "Fable", 5, 2),
    _m("claude-fable-5-1", "Fable", 5, 1),
    _m("claude-fable-5", "Fable", 5),
    _m("claude-mythos-5-1", "Mythos", 5, 1),
    _m("claude-mythos-5", "Mythos", 5),
    _m("claude-opus-5-5", "Opus", 5, 5),
    _m("claude-opus-5", "Opus", 5),
    _m("claude-opus-4-8", "Opus", 4, 8),
    _m("claude-opus-4-7", "Opus", 4, 7),
    _m("claude-opus-4-6", "Opus", 4, 6),
    _m("claude-opus-4-5", "Opus", 4, 5),
    _m("claude-opus-4-1", "Opus", 4, 1),
    _m("claude-opus-4", "Opus", 4),
    _m("claude-sonnet-5-5", "Sonnet", 5, 5),
    _m("claude-sonnet-5", "Sonnet", 5),
    _m("claude-sonnet-4-6", "Sonnet", 4, 6),
    _m("claude-sonnet-4-5", "Sonnet", 4, 5),
    _m("claude-sonnet-4", "Sonnet", 4),
    _m("claude-3-7-sonnet", "Sonnet", 3, 7),
    _m("claude-haiku-5-5", "Haiku", 5, 5),
    _m("claude-haiku-4-5", "Haiku", 4, 5),
    _m("claude-3-5-haiku", "Haiku", 3, 5),
)
BY_ID = {m.id: m for m in LINEUP}


def model_info(model: str | None) -> Model | None:
    """The lineup's row for `model`, or its family's for a dated or `-latest` id; None: unknown."""
    if not model:
        return None
    return BY_ID.get(model) or BY_ID.get(DATED.sub("", model))


def newest(family: str) -> Model:
    return max((m for m in LINEUP if m.family == family), key=lambda m: m.version)


def generation_note(model: str | None) -> str | None:
    """What `auto check` and the run form's preview say about a pinned model: its generation,
    whether it is legacy, and the family's newest (None: a model the lineup does not know)."""
    info = model_info(model)
    if info is None:
        return None
    latest = newest(info.family)
    if info.legacy:
        return f"{model} is of the legacy {info.generation}.x generation; the current {info.family} is {latest.id}"
    if info.id != latest.id:
        return f"{model} is of the current {info.generation}.x generation; the newest {info.family} is {latest.id}"
    return f"{model} is the current {info.family} ({info.generation}.x generation)"


def tokenizer_note(before: str | None, after: str | None) -> str | None:
    """When a recipe's model changes generation across the tokenizer change: the same work now
    counts about 30% more tokens (or fewer, going back). None when nothing changes or a model
    is unknown."""
    old, new = model_info(before), model_info(after)
    if old is None or new is None:
        return None
    newer = CURRENT_GENERATION
    if (old.generation >= newer) == (new.generation >= newer):
        return None
    change = f"{before} ({old.generation}.x) to {after} ({new.generation}.x)"
    if new.generation >= newer:
        return (
            f"the model changes generation, {change}: its tokenizer counts about "
            f"{TOKENIZER_GROWTH_PERCENT}% more tokens for the same text, so the same work now counts "
            f"about {TOKENIZER_GROWTH_PERCENT}% more tokens against the same budget"
        )
    return (
        f"the model changes generation, {change}: the older tokenizer counts fewer tokens for the same "
        f"text (the {newer}.x one counts about {TOKENIZER_GROWTH_PERCENT}% more), so the same work now "
        "counts about a quarter fewer tokens"
    )
