"""A tool call under the run's policy (docs/policy.md): `bash.deny` refuses a command before it
runs, `approval.always_gate` and a `bash.allow` it falls outside make it wait for a person. The
policy's patterns are matched as the recipe's `approve:` patterns are (runs.approvals)."""

from __future__ import annotations

from collections.abc import Sequence

from agents.shell_commands import CommandSubject
from policies.rules import Decision, Merged, decide
from runs import approvals


class PolicedCall:
    """A call as policies.rules.decide asks about it: (tool, subjects) pairs it amounts to."""

    def __init__(self, asked: list[tuple[str, list[str]]]):
        self.asked = asked

    @property
    def is_command(self) -> bool:
        return approvals.gate_call(["bash"], self.asked) is not None

    def held(self, patterns: Sequence[str]) -> tuple[str, str] | None:
        return approvals.gate_call(list(patterns), self.asked)

    def all_held(self, patterns: Sequence[str]) -> bool:
        """Every command of a command line held (an unreadable one never is); else the call."""
        for tool, subjects in self.asked:
            commands = [s for s in subjects if isinstance(s, CommandSubject)]
            if not commands:
                if approvals.gate(list(patterns), tool, subjects) is None:
                    return False
                continue
            if any(s.unreadable for s in commands):
                return False
            if any(approvals.gate(list(patterns), tool, [s]) is None for s in commands):
                return False
        return True


def policy_decision(policy: Merged | None, asked: list[tuple[str, list[str]]]) -> Decision | None:
    if policy is None or not policy.holds_calls:
        return None
    return decide(policy, PolicedCall(asked))
