"""`auto <kind> schedule add|list|rm|enable|disable|owner …`: recipes' schedules from the CLI."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from cli.common import Cli
from runs import services
from schedules import services as schedule_services
from schedules.models import RecipeSchedule


def do_schedule(cli: Cli, target, recipe_args, options):
    """auto <kind> schedule add NAME WHEN RECIPE [ARGS…] [--tz TZ] [--owner USER] | list |
    rm|enable|disable NAME | owner NAME [USER] (no USER: the schedule has no owner)"""
    sub = target or "list"
    try:
        if sub == "list":
            return _schedule_list(cli)
        if sub == "add":
            if len(recipe_args) < 3:
                raise CommandError(f'auto {cli.kind} schedule add NAME "WHEN" RECIPE [ARGS...] [--tz TZ]')
            name, when, recipe, *args = recipe_args
            services.recipe_source(kind=cli.kind, name_or_path=recipe)  # refuses an unknown recipe now
            owner = _user(options["owner"]) if options["owner"] else None
            row = schedule_services.schedule_add(
                name=name, kind=cli.kind, recipe=recipe, args=args, when=when, tz=options["tz"] or "", owner=owner
            )
            cli.stdout.write(
                f"schedule {row.name}: {row.command} at {row.when}"
                f" ({row.timezone or settings.TIME_ZONE}); next run {row.q.next_run:%Y-%m-%d %H:%M} UTC"
                + (f"; runs for {owner.get_username()}" if owner else "")
            )
            return
        if sub == "owner" and len(recipe_args) in (1, 2):
            owner = _user(recipe_args[1]) if len(recipe_args) == 2 else None
            cli.stdout.write(schedule_services.schedule_set_owner(name=recipe_args[0], owner=owner))
            return
        if sub not in ("rm", "enable", "disable") or len(recipe_args) != 1:
            raise CommandError(f"auto {cli.kind} schedule add|list|rm|enable|disable NAME | owner NAME [USER]")
        action = {
            "rm": schedule_services.schedule_remove,
            "enable": schedule_services.schedule_enable,
            "disable": schedule_services.schedule_disable,
        }[sub]
        cli.stdout.write(action(name=recipe_args[0]))
    except schedule_services.ScheduleError as exc:
        raise CommandError(str(exc)) from None


def _schedule_list(cli: Cli):
    rows = RecipeSchedule.objects.filter(kind=cli.kind).select_related("q", "owner")
    if not rows:
        cli.stdout.write(f"no {cli.kind} schedules")
        return
    table = [("name", "origin", "owner", "command", "when", "timezone", "next run (UTC)", "state", "failures", "last")]
    for r in rows:
        table.append(
            (
                r.name,
                r.origin,
                schedule_services.schedule_owner(r).shown,
                r.command,
                r.when,
                r.timezone or settings.TIME_ZONE,
                f"{r.q.next_run:%Y-%m-%d %H:%M}" if r.enabled and r.q.next_run else "-",
                "enabled" if r.enabled else "disabled",
                str(r.failures),
                (r.disabled_reason or r.last_message)[:60],
            )
        )
    cli.table(table)


def _user(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user named {username!r}")
    return user


VERBS = {"schedule": do_schedule}
