"""`auto quota set|list|rm` and `auto price set|list|rm` (docs/spend.md): the CLI face of the spend
services, for admins on the server. Each function returns the lines to print, or raises
CommandError with the service's message; `auto` (cli/management/commands/auto.py) calls them.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils import timezone

from budgets.quota import DAY, MONTH, ROLLING
from budgets.units import UnitError, parse_tokens
from catalogue.plan_report import format_rate
from catalogue.spec import KINDS, Kind
from spend.models import Quota, Scope
from spend.selectors import price_rows, quota_bar, sdk_price_rows
from spend.services import QuotaError, price_remove, price_set, quota_remove, quota_set

WINDOW_WORDS = {"day": DAY, "month": MONTH, "rolling": ROLLING, "rolling24h": ROLLING, ROLLING: ROLLING}
QUOTA_USAGE = (
    "auto quota set installation|recipe KIND/NAME|user USERNAME --window day|month|rolling "
    "[--tokens SIZE] [--dollars AMOUNT] | auto quota list | auto quota rm ID | "
    "auto quota rm SCOPE [WHO] --window W"
)
PRICE_USAGE = (
    "auto price set MODEL --input USD --output USD --cache-read USD --cache-write USD [--cache-write-1h USD] "
    "(per million tokens; the 1-hour write defaults to 2 × input) | auto price list | auto price rm MODEL"
)


def quota_cli(action: str, words: list[str], options: dict) -> list[str]:
    try:
        if action == "list":
            return quota_table()
        if action == "set":
            scope, target, user = _who(words)
            quota = quota_set(
                scope=scope,
                window=_window(options.get("window")),
                tokens=_tokens(options.get("tokens")),
                dollars=_dollars("--dollars", options.get("dollars")),
                target=target,
                user=user,
            )
            return [f"{quota.name}: {quota.limit_text()}"]
        if action == "rm":
            return [quota_remove(quota=_quota(words, options))]
    except QuotaError as exc:
        raise CommandError(str(exc)) from None
    raise CommandError(QUOTA_USAGE)


def _who(words: list[str]) -> tuple[str, str, object]:
    """(scope, recipe target, user) from `installation`, `recipe KIND/NAME`, `user USERNAME`."""
    if not words:
        raise CommandError(QUOTA_USAGE)
    scope, rest = words[0], words[1:]
    if scope not in Scope.values:
        raise CommandError(f"scope {scope!r}: expected installation, recipe KIND/NAME or user USERNAME")
    wants = 0 if scope == Scope.INSTALLATION else 1
    if len(rest) != wants:
        raise CommandError(
            {
                Scope.INSTALLATION: "an installation quota names nobody: auto quota set installation --window …",
                Scope.RECIPE: "a recipe quota names its recipe: auto quota set recipe web/publish-story --window …",
                Scope.USER: "a user quota names its user: auto quota set user alice --window …",
            }[scope]
        )
    if scope == Scope.RECIPE:
        return scope, _recipe_target(rest[0]), None
    if scope == Scope.USER:
        user = get_user_model().objects.filter(username=rest[0]).first()
        if user is None:
            raise CommandError(f"no user named {rest[0]!r}")
        return scope, "", user
    return scope, "", None


def _recipe_target(text: str) -> str:
    """`web/publish-story` (what runs are counted by); `webs/publish-story`, the folder, too."""
    kind, _, name = text.strip().partition("/")
    kind = KINDS.get(kind, kind)
    if kind not in {k.value for k in Kind} or not name or "/" in name:
        raise CommandError(f"recipe {text!r}: expected KIND/NAME such as web/publish-story or task/reading-list")
    return f"{kind}/{name}"


def _window(word: str | None) -> str:
    if word is None:
        raise CommandError("--window is needed: day, month or rolling (24 h)")
    window = WINDOW_WORDS.get(word.strip().lower())
    if window is None:
        raise CommandError(f"--window {word!r}: expected day, month or rolling (24 h)")
    return window


def _tokens(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return parse_tokens(text)
    except UnitError as exc:
        raise CommandError(f"--tokens: {exc}") from None


def _dollars(flag: str, text: str | None) -> Decimal | None:
    if text is None:
        return None
    try:
        amount = Decimal(text.strip().lstrip("$").replace(",", ""))
    except InvalidOperation:
        raise CommandError(f"{flag} {text!r}: expected an amount in USD such as 50 or 12.50") from None
    if not amount.is_finite():
        raise CommandError(f"{flag} {text!r}: expected an amount in USD such as 50 or 12.50")
    return amount


def _quota(words: list[str], options: dict) -> Quota:
    """`rm ID`, or `rm SCOPE [WHO] --window W`."""
    if len(words) == 1 and words[0].lstrip("#").isdigit():
        quota = Quota.objects.filter(pk=int(words[0].lstrip("#"))).first()
        if quota is None:
            raise CommandError(f"no quota #{words[0].lstrip('#')} (auto quota list shows them)")
        return quota
    scope, target, user = _who(words)
    window = _window(options.get("window"))
    quota = Quota.objects.filter(scope=scope, target=target, user=user, window=window).first()
    if quota is None:
        raise CommandError(f"no {scope} quota over {window}{' for ' + ' '.join(words[1:]) if words[1:] else ''}")
    return quota


def quota_table() -> list[str]:
    quotas = Quota.objects.select_related("user")
    if not quotas:
        return ["no quotas: runs are limited only by their own budgets"]
    rows = [("id", "quota", "window", "limit", "used", "reserved", "left", "resets at")]
    for quota in quotas:
        bar = quota_bar(quota)  # rolls its window over first
        rows.append(
            (
                f"#{quota.pk}",
                quota.subject,
                quota.get_window_display(),
                " + ".join(axis.limit_text for axis in bar.axes),
                " + ".join(axis.used_text for axis in bar.axes),
                " + ".join(axis.reserved_text for axis in bar.axes),
                " + ".join(axis.left_text for axis in bar.axes),
                f"{timezone.localtime(bar.resets_at):%Y-%m-%d %H:%M %Z}",
            )
        )
    return table(rows)


# -- prices ------------------------------------------------------------------------------------------


def price_cli(action: str, words: list[str], options: dict) -> list[str]:
    try:
        if action == "list":
            return price_table_lines()
        if action == "set" and len(words) == 1:
            rates = {}
            for name in ("input", "output", "cache_read", "cache_write"):
                flag = f"--{name.replace('_', '-')}"
                rates[name] = _dollars(flag, options.get(f"price_{name}"))
                if rates[name] is None:
                    raise CommandError(
                        f"auto price set {words[0]} needs {flag} (USD per million tokens); {PRICE_USAGE}"
                    )
            rates["cache_write_1h"] = _dollars("--cache-write-1h", options.get("price_cache_write_1h"))
            row = price_set(model=words[0], **rates)
            p = row.price
            return [
                f"price of {row.model}: input {format_rate(p.input)}, output {format_rate(p.output)}, "
                f"cache read {format_rate(p.cache_read)}, cache write {format_rate(p.cache_write)} "
                f"(1 hour {format_rate(p.write_1h)}) per million tokens"
            ]
        if action == "rm" and len(words) == 1:
            return [price_remove(model=words[0])]
    except QuotaError as exc:
        raise CommandError(str(exc)) from None
    raise CommandError(PRICE_USAGE)


def price_table_lines() -> list[str]:
    """The table in force (USD per million tokens) with where each row comes from, then the
    models the pinned SDK names that no row prices."""
    known = price_rows()
    rows = [("model", "input", "output", "cache read", "cache write", "1h write", "source")]
    for row in known:
        p = row.price
        source = row.source + (" (over the built-in row)" if row.overrides else "")
        rates = tuple(format_rate(r) for r in (p.input, p.output, p.cache_read, p.cache_write, p.write_1h))
        rows.append((row.model, *rates, source))
    lines = table(rows)
    sdk = sdk_price_rows(known)
    unpriced = [row.model for row in sdk if row.price is None]
    family = [f"{row.model} (as {row.priced_by})" for row in sdk if row.price is not None]
    if family:
        lines += ["", "priced through their family's row: " + ", ".join(family)]
    if unpriced:
        lines += [
            "",
            "no price (money shows as n/a; a dollar quota pauses their runs): " + ", ".join(unpriced),
            "  set one with: auto price set MODEL --input USD --output USD --cache-read USD --cache-write USD",
        ]
    return lines


def table(rows) -> list[str]:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
