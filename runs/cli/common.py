"""What every verb of `auto` is given: the recipe kind and the command's streams, and the
lookups the groups share (a run by id or recipe name, a plain-text table)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.management.base import CommandError, OutputWrapper

from runs.models import ACTIVE_STATES, Run


@dataclass(frozen=True)
class Cli:
    """One call of `auto`: the recipe kind it names, and the command's own output streams."""

    kind: str  # web | task | code: the recipe kind the command was called for
    stdout: OutputWrapper
    stderr: OutputWrapper

    def run(self, target: str, states=ACTIVE_STATES) -> Run:
        """A run id, or the recipe's active run (any latest run when `states` is None)."""
        digits = target.lstrip("#")
        if digits.isdigit():
            run = Run.objects.filter(pk=int(digits), kind=self.kind).first()
            if run is None:
                raise CommandError(f"no {self.kind} run #{digits}")
            return run
        runs = Run.objects.filter(kind=self.kind, name=target)
        run = (runs.filter(state__in=states) if states else runs).order_by("-created_at", "-id").first()
        if run is None:
            latest = runs.order_by("-created_at", "-id").first()
            if latest is None:
                raise CommandError(f"{self.kind}/{target} has no runs")
            raise CommandError(
                f"{self.kind}/{target} has no active run; its latest, #{latest.pk}, finished ({latest.cause})"
            )
        return run

    def table(self, rows):
        widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            self.stdout.write("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
