"""What every verb of `auto` is given: the recipe kind and the command's streams, and the
lookups the groups share (a run by id or recipe name, a plain-text table)."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass

from django.core.management.base import CommandError, OutputWrapper
from django.db import DatabaseError, connection

from runs.models import ACTIVE_STATES, Run

MANY_SHOWN = 10  # runs named in a refusal, at most
# what libraries say at INFO that is not for the person at the command line: django-q2's
# "Enqueued [rysh] 12", the HTTP clients' "HTTP Request: POST …" (their warnings still show)
CHATTY_LOGGERS = ("django-q", "httpx", "httpx2")


@dataclass(frozen=True)
class Cli:
    """One call of `auto`: the recipe kind it names, and the command's own output streams."""

    kind: str  # web | task | code: the recipe kind the command was called for
    stdout: OutputWrapper
    stderr: OutputWrapper

    def run(self, target: str, states=ACTIVE_STATES, args: list[str] | None = None) -> Run:
        """A run id, or the recipe's active run (any latest run when `states` is None). When runs
        of the recipe are active side by side (a coding recipe's, with other arguments), `args`
        picks one; without them the choice is refused, naming the runs."""
        digits = target.lstrip("#")
        if digits.isdigit():
            run = Run.objects.filter(pk=int(digits), kind=self.kind).first()
            if run is None:
                raise CommandError(f"no {self.kind} run #{digits}")
            return run
        runs = Run.objects.filter(kind=self.kind, name=target)
        if args:
            runs = runs.filter(args=list(args))
        self._refuse_ambiguous(target, runs, args)
        run = (runs.filter(state__in=states) if states else runs).order_by("-created_at", "-id").first()
        if run is None:
            latest = runs.order_by("-created_at", "-id").first()
            if latest is None:
                raise CommandError(f"{self.kind}/{target} has no runs")
            raise CommandError(
                f"{self.kind}/{target} has no active run; its latest, #{latest.pk}, finished ({latest.cause})"
            )
        return run

    def _refuse_ambiguous(self, target: str, runs, args: list[str] | None) -> None:
        """Active runs of one recipe in two slots (runs.slots): a name alone does not say which
        is meant. A cancelled run and its resume share a slot: the newer is meant, as ever."""
        newest: dict[str, Run] = {}
        for run in runs.filter(state__in=ACTIVE_STATES).order_by("created_at", "id"):
            newest[run.slot] = run
        holding = list(newest.values())[:MANY_SHOWN]
        if len(holding) < 2:
            return
        listed = "; ".join(f"#{run.pk} ({run.state_label}, args: {' '.join(run.args) or '(none)'})" for run in holding)
        given = f" with arguments {' '.join(args)!r}" if args else ""
        raise CommandError(
            f"{self.kind}/{target}{given} has {len(holding)} active runs: {listed}. Name one by its id "
            f"(#{holding[0].pk}), or give its arguments after the recipe's name; `auto {self.kind} status "
            f"{target}` lists them"
        )

    def table(self, rows):
        widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            self.stdout.write("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def database_problem() -> str | None:
    """One line instead of a traceback when the database has no tables yet (`migrate` never ran)."""
    try:
        tables = connection.introspection.table_names()
    except DatabaseError as exc:
        return f"cannot open the database: {str(exc).splitlines()[0]}"
    if Run._meta.db_table in tables:
        return None
    return f"the database {connection.settings_dict['NAME']} has no tables yet: run `python manage.py migrate` first"


@contextmanager
def quiet_libraries():
    """The command's own lines only, while it runs: the chatty loggers at WARNING."""
    loggers = [logging.getLogger(name) for name in CHATTY_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
