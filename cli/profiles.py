"""`auto web profile list|rm NAME`: the browser profiles of web recipes."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError

from agents import profiles
from catalogue.spec import Kind
from cli.common import Cli


def do_profile(cli: Cli, target, recipe_args, options):
    if cli.kind != Kind.WEB:
        raise CommandError("browser profiles belong to web recipes: auto web profile list|rm NAME")
    sub = target or "list"
    if sub == "list":
        rows = profiles.profiles_list()
        if not rows:
            cli.stdout.write(
                f"no browser profiles yet in {settings.RYSH_PROFILES_DIR} "
                "(a web run or `manage.py web_login NAME URL` creates one)"
            )
            return
        cli.table(
            [("profile", "size", "last used", "in use")]
            + [
                (
                    r["name"],
                    f"{r['bytes'] / 1e6:.1f} MB",
                    f"{r['used']:%Y-%m-%d %H:%M}",
                    "yes" if r["in_use"] else "no",
                )
                for r in rows
            ]
        )
    elif sub in ("rm", "delete"):
        if len(recipe_args) != 1:
            raise CommandError("auto web profile rm NAME")
        try:
            cli.stdout.write(profiles.profile_delete(name=recipe_args[0]))
        except profiles.ProfileRefused as exc:
            raise CommandError(str(exc)) from None
    else:
        raise CommandError(f"unknown profile action {sub!r}: auto web profile list|rm NAME")


VERBS = {"profile": do_profile}
