"""A team's policy file (docs/policy.md): reading `.rysh/policy.yaml` (or the organisation's
policy) with the line of every refusal, and merging policies so the strictest wins.

Keys: `bash.allow`, `bash.deny` (command patterns, read as `approve:` reads `bash(...)`),
`approval.auto_approve`, `approval.always_gate` (tool names or patterns, as `approve:` entries)
and `budget.ceilings.run` / `budget.ceilings.pass` (token sizes). An unknown key or a wrong type
anywhere is an error: a policy that cannot be read governs nothing, so it stops every run.

Merging (org first, then the repository): denies and gates add up; every allowlist that is set
must allow a command (a command outside any of them waits for a person); `auto_approve` lifts a
gate the policy adds only when every file allows it (a file without the list allows nothing);
the lower ceiling wins.

Pure: stdlib, PyYAML and the budget units; no Django, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from agents.shell_commands import COMMAND_PATTERN, pattern_words
from budgets.units import format_tokens
from catalogue.recipe.reader import BAD, Reader, RecipeError, RecipeIssue

REPO_POLICY = ".rysh/policy.yaml"

_HOMES = {
    "": ("bash", "approval", "budget"),
    "bash": ("allow", "deny"),
    "approval": ("auto_approve", "always_gate"),
    "budget": ("ceilings",),
    "budget.ceilings": ("run", "pass"),
}
_TOOL_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")
_COMMAND_EXPECTED = "a command such as `git push`, a prefix such as `git push:*`, or `bash(git push:*)`"


@dataclass(frozen=True)
class Rule:
    """One pattern of a policy, and where it is written (`.rysh/policy.yaml:4 bash.deny`)."""

    pattern: str
    where: str


@dataclass(frozen=True)
class Ceiling:
    tokens: int
    where: str


@dataclass(frozen=True)
class Policy:
    """One policy file as read. None: the key is not set."""

    label: str
    allow: tuple[Rule, ...] | None = None
    deny: tuple[Rule, ...] = ()
    auto_approve: tuple[Rule, ...] | None = None
    always_gate: tuple[Rule, ...] = ()
    run: Ceiling | None = None
    pass_: Ceiling | None = None


def parse_policy(text: str, *, label: str = REPO_POLICY) -> Policy:
    """The policy in `text`, or RecipeError with every issue (file, line, field, expected)."""
    reader = Reader(label, 1, _HOMES)
    try:
        return _read(reader, text.removeprefix("\ufeff"), label)
    finally:
        reader.close()


def policy_issues(text: str, *, label: str = REPO_POLICY) -> list[RecipeIssue]:
    try:
        parse_policy(text, label=label)
    except RecipeError as exc:
        return list(exc.issues)
    return []


def _read(r: Reader, text: str, label: str) -> Policy:
    top = r.top_level(text)
    values: dict = {}
    if "bash" in top and (bash := r.mapping(top["bash"], "bash", _HOMES["bash"])) is not None:
        for key in ("allow", "deny"):
            if key in bash:
                values[key] = _rules(r, bash[key], f"bash.{key}", _command_rule)
    if "approval" in top and (approval := r.mapping(top["approval"], "approval", _HOMES["approval"])) is not None:
        for key in ("auto_approve", "always_gate"):
            if key in approval:
                values[key] = _rules(r, approval[key], f"approval.{key}", _tool_rule)
    if "budget" in top and (budget := r.mapping(top["budget"], "budget", _HOMES["budget"])) is not None:
        if "ceilings" in budget:
            ceilings = r.mapping(budget["ceilings"], "budget.ceilings", _HOMES["budget.ceilings"]) or {}
            for key in ("run", "pass"):
                if key in ceilings and (tokens := r.tokens(ceilings[key], f"budget.ceilings.{key}")) is not None:
                    values[key] = Ceiling(tokens, f"{label}:{r.line(ceilings[key])} budget.ceilings.{key}")
    if r.issues:
        raise RecipeError(r.issues)
    return Policy(
        label=label,
        allow=values.get("allow"),
        deny=values.get("deny", ()),
        auto_approve=values.get("auto_approve"),
        always_gate=values.get("always_gate", ()),
        run=values.get("run"),
        pass_=values.get("pass"),
    )


def _rules(r: Reader, node, field: str, read_one) -> tuple[Rule, ...]:
    items = r.items(node, field, "patterns")
    if items is None:
        return ()
    rules = []
    for index, (item, value) in enumerate(items):
        if value is BAD:
            continue
        pattern = read_one(value)
        if pattern is None:
            what = (
                _COMMAND_EXPECTED if read_one is _command_rule else f"a tool name (save_result) or {_COMMAND_EXPECTED}"
            )
            r.expected(item, f"{field}[{index}]", what)
            continue
        rules.append(Rule(pattern, f"{r.label}:{r.line(item)} {field}"))
    return tuple(rules)


def _command_rule(value: object) -> str | None:
    """A `bash.*` entry as `approve:` writes it: `bash(<spec>)` (a bare spec is wrapped)."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text == "bash":
        return text
    match = COMMAND_PATTERN.match(text)
    if match is not None:
        return text if match["tool"] == "bash" and _good_spec(match["spec"]) else None
    return f"bash({text})" if _good_spec(text) else None


def _good_spec(spec: str) -> bool:
    """A command or a prefix ending in `:*`; a * elsewhere would be taken literally: refused."""
    body = spec.strip().removesuffix(":*")
    return "*" not in body and bool(pattern_words(body) or spec.strip() == ":*")


def _tool_rule(value: object) -> str | None:
    """An `approval.*` entry: a tool name, `tool:glob`, or a command pattern."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    match = COMMAND_PATTERN.match(text)
    if match is not None:
        return text if _good_spec(match["spec"]) else None
    name = text.partition(":")[0].strip()
    return text if _TOOL_NAME.match(name) else None


# --- merging ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Merged:
    """The policies that apply to a run, merged (org first); stored on the run as `to_json()`."""

    sources: tuple[str, ...] = ()
    deny: tuple[Rule, ...] = ()
    always_gate: tuple[Rule, ...] = ()
    allow_layers: tuple[tuple[Rule, ...], ...] = ()  # a command must match one rule of each
    auto_layers: tuple[tuple[Rule, ...], ...] = ()  # a policy gate is lifted when each holds it
    run: Ceiling | None = None
    pass_: Ceiling | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)  # what the policy did to the plan

    @property
    def empty(self) -> bool:
        return not (self.holds_calls or self.run or self.pass_)

    @property
    def holds_calls(self) -> bool:
        """Whether any rule can refuse or hold a tool call (ceilings alone cannot)."""
        return bool(self.deny or self.always_gate or self.allow_layers)

    def to_json(self) -> dict:
        rules = lambda rs: [[r.pattern, r.where] for r in rs]  # noqa: E731
        ceiling = lambda c: None if c is None else [c.tokens, c.where]  # noqa: E731
        return {
            "sources": list(self.sources),
            "deny": rules(self.deny),
            "always_gate": rules(self.always_gate),
            "allow_layers": [rules(layer) for layer in self.allow_layers],
            "auto_layers": [rules(layer) for layer in self.auto_layers],
            "run": ceiling(self.run),
            "pass": ceiling(self.pass_),
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: dict | None) -> Merged:
        if not data:
            return cls()
        rules = lambda rs: tuple(Rule(p, w) for p, w in rs)  # noqa: E731
        ceiling = lambda c: None if c is None else Ceiling(int(c[0]), c[1])  # noqa: E731
        return cls(
            sources=tuple(data.get("sources", ())),
            deny=rules(data.get("deny", ())),
            always_gate=rules(data.get("always_gate", ())),
            allow_layers=tuple(rules(layer) for layer in data.get("allow_layers", ())),
            auto_layers=tuple(rules(layer) for layer in data.get("auto_layers", ())),
            run=ceiling(data.get("run")),
            pass_=ceiling(data.get("pass")),
            notes=tuple(data.get("notes", ())),
        )

    def lines(self) -> list[str]:
        """The merged policy in words, one rule a line with where it is written."""
        out = [f"deny {r.pattern}  ({r.where})" for r in self.deny]
        out += [f"always ask for {r.pattern}  ({r.where})" for r in self.always_gate]
        for layer in self.allow_layers:
            shown = ", ".join(r.pattern for r in layer) or "nothing"
            where = layer[0].where if layer else "an empty bash.allow"
            out.append(f"commands run without asking only when allowed by: {shown}  ({where})")
        for name, ceiling in (("run", self.run), ("pass", self.pass_)):
            if ceiling is not None:
                out.append(f"{name} ceiling {format_tokens(ceiling.tokens)}  ({ceiling.where})")
        return out


def merge(policies: Sequence[Policy]) -> Merged:
    """Strictest wins (module docstring); `policies` in order of authority, the org's first."""
    policies = list(policies)
    return Merged(
        sources=tuple(p.label for p in policies),
        deny=tuple(r for p in policies for r in p.deny),
        always_gate=tuple(r for p in policies for r in p.always_gate),
        allow_layers=tuple(p.allow for p in policies if p.allow is not None),
        auto_layers=tuple(p.auto_approve or () for p in policies) if any(p.auto_approve for p in policies) else (),
        run=_lowest(p.run for p in policies),
        pass_=_lowest(p.pass_ for p in policies),
    )


def _lowest(ceilings) -> Ceiling | None:
    found = [c for c in ceilings if c is not None]
    return min(found, key=lambda c: c.tokens) if found else None


# --- deciding a tool call ---------------------------------------------------------------------


class Call(Protocol):
    """A tool call as the policy asks about it (runs' side matches with the approvals' gate)."""

    def held(self, patterns: Sequence[str]) -> tuple[str, str] | None:
        """(pattern, subject) of the first pattern that holds the call, as `approve:` would."""

    def all_held(self, patterns: Sequence[str]) -> bool:
        """Whether the patterns hold ALL of the call: each command of a command line (an
        unreadable line is never all held)."""

    @property
    def is_command(self) -> bool: ...


@dataclass(frozen=True)
class Decision:
    action: str  # DENY or GATE
    rule: str  # where the rule is written
    pattern: str
    subject: str

    def refusal(self) -> str:
        """What the model hears for a denied call."""
        said = f" ({self.subject!r})" if self.subject else ""
        return (
            f"refused by policy: {self.pattern} in {self.rule} denies this command{said}; it was not run. "
            "Do the task another way."
        )


DENY, GATE = "deny", "gate"


def decide(policy: Merged, call: Call) -> Decision | None:
    """What the policy does to a call: refuse it, make it wait for a person, or nothing (None).
    Restrictive rules first, so no permissive rule can lift a deny or an always_gate."""
    if call.is_command:
        for rule in policy.deny:
            if (held := call.held([rule.pattern])) is not None:
                return Decision(DENY, rule.where, rule.pattern, held[1])
    for rule in policy.always_gate:
        if (held := call.held([rule.pattern])) is not None:
            return Decision(GATE, rule.where, rule.pattern, held[1])
    if not call.is_command:
        return None
    for layer in policy.allow_layers:
        if not call.all_held([r.pattern for r in layer]):
            if policy.auto_layers and all(call.all_held([r.pattern for r in auto]) for auto in policy.auto_layers):
                return None
            where = layer[0].where if layer else "bash.allow"
            return Decision(GATE, where, "bash.allow", "")
    return None
