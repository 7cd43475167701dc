"""What `auto <kind> check` says of a recipe's eval cases (docs/evals.md): each case's own
errors (file and line), its `args` against the recipe's arguments, and warnings. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from catalogue.spec import RecipeSpec
from evals.format import EXPECT_KEYS, Case, CaseError, check_args


@dataclass(frozen=True)
class CaseCheck:
    case: Case
    errors: tuple[CaseError, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def line(self) -> str:
        """One line for the check's list: `name: ok (what it asserts)` or `name: N error(s)`."""
        if self.errors:
            return f"{self.case.name}: {len(self.errors)} error(s)"
        return f"{self.case.name}: ok ({asserted(self.case)})"


def case_check(case: Case, spec: RecipeSpec) -> CaseCheck:
    """A case as it would run on `spec`: broken (its files), or refused (its args), or fine."""
    errors = list(case.errors)
    if not case.broken:
        errors += check_args(case, list(spec.args), recipe=spec.target)
    warnings = []
    if case.files and spec.workdir is None:
        warnings.append(
            f"{case.folder}/files: {spec.target} has no working copy (no workdir:), so the case's files are not used"
        )
    return CaseCheck(case, tuple(errors), tuple(warnings))


def asserted(case: Case) -> str:
    """What a case checks, in expect.yaml's order: `files_changed, max_tokens; judge.md`."""
    keys = [key for key in EXPECT_KEYS if _set(getattr(case.expect, key))]
    said = ", ".join(keys) if keys else "no assertions"
    return f"{said}; judge.md" if case.rubric else said


def _set(value) -> bool:
    return value is not None and value != ()
