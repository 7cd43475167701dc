"""Spend governance (docs/spend.md): quotas across runs, the reservations they hold for calls in
flight, and the prices admins set for models the table in code does not know (or prices anew).

A Quota row is also its own live counter: what its current window has settled (`used_*`)
and what calls in flight have reserved (`reserved_*`). Only spend.quotas writes them, by
conditional UPDATEs of this one row, so the check and the reservation are one statement
that two workers cannot both win past the limit.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models

from budgets.prices import Price
from budgets.quota import DAY, MONTH, ROLLING, Standing, from_micros
from budgets.units import format_tokens
from rysh_site.models import Stamped


class Scope(models.TextChoices):
    INSTALLATION = "installation"
    RECIPE = "recipe"  # every run of one recipe target (kind/name)
    USER = "user"  # the runs a person started; a scheduled run counts against the schedule's owner


class Window(models.TextChoices):
    DAY_ = DAY, "calendar day"
    MONTH_ = MONTH, "calendar month"
    ROLLING_ = ROLLING, "rolling 24 h"


WINDOW_NOUN = {DAY: "today's", MONTH: "this month's", ROLLING: "the last 24 h's"}


class Quota(Stamped):
    scope = models.CharField(max_length=20, choices=Scope.choices)
    target = models.CharField(max_length=210, blank=True)  # recipe scope: kind/name
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    window = models.CharField(max_length=20, choices=Window.choices)
    tokens = models.BigIntegerField(null=True, blank=True)  # the limit in counted tokens
    micros = models.BigIntegerField(null=True, blank=True)  # the limit in micro-dollars
    # the live counters (spend.quotas): the window they cover, what it settled, what is in flight
    window_start = models.DateTimeField(null=True, blank=True)
    used_tokens = models.BigIntegerField(default=0)
    used_micros = models.BigIntegerField(default=0)
    reserved_tokens = models.BigIntegerField(default=0)
    reserved_micros = models.BigIntegerField(default=0)
    # created_by, created_at, updated_at: Stamped (rysh_site/models.py)

    class Meta:
        ordering = ["scope", "target", "user_id", "window"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(tokens__isnull=False) | models.Q(micros__isnull=False), name="quota_limits_something"
            ),
            models.UniqueConstraint(
                fields=["window"], condition=models.Q(scope="installation"), name="one_installation_quota_per_window"
            ),
            models.UniqueConstraint(
                fields=["target", "window"], condition=models.Q(scope="recipe"), name="one_recipe_quota_per_window"
            ),
            models.UniqueConstraint(
                fields=["user", "window"], condition=models.Q(scope="user"), name="one_user_quota_per_window"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject} {self.get_window_display()} quota"

    @property
    def subject(self) -> str:
        """Whose quota: `the installation`, `recipe web/foo`, `user alice`."""
        if self.scope == Scope.RECIPE:
            return f"recipe {self.target}"
        if self.scope == Scope.USER:
            return f"user {self.user.get_username() if self.user else '(deleted)'}"
        return "the installation"

    @property
    def name(self) -> str:
        """What pages say: `today's installation quota`, `this month's quota of recipe web/foo`."""
        noun = WINDOW_NOUN[self.window]
        if self.scope == Scope.INSTALLATION:
            return f"{noun} installation quota"
        return f"{noun} quota of {self.subject}"

    @property
    def pause_reason(self) -> str:
        """`quota: installation` / `quota: recipe` / `quota: user` — what paused(...) says."""
        return f"quota: {self.scope}"

    @property
    def dollars(self) -> Decimal | None:
        return from_micros(self.micros)

    @property
    def standing(self) -> Standing:
        return Standing(
            tokens=self.tokens,
            micros=self.micros,
            used_tokens=self.used_tokens,
            used_micros=self.used_micros,
            reserved_tokens=self.reserved_tokens,
            reserved_micros=self.reserved_micros,
        )

    def limit_text(self) -> str:
        parts = []
        if self.tokens is not None:
            parts.append(f"{format_tokens(self.tokens)} tokens")
        if self.micros is not None:
            parts.append(f"${self.dollars:,.2f}")
        return " and ".join(parts)


class QuotaHold(models.Model):
    """A call in flight's reservation on one quota: taken with the call's pending step, in the
    same transaction, and released (deleted) when the step is settled — the delete is the
    claim, so a step is settled against a quota once."""

    step = models.ForeignKey("runs.Step", on_delete=models.CASCADE, related_name="quota_holds")
    quota = models.ForeignKey(Quota, on_delete=models.CASCADE, related_name="holds")
    tokens = models.BigIntegerField()
    micros = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["step", "quota"], name="one_hold_per_step_and_quota")]


class ModelPrice(models.Model):
    """An admin's price for a model (or a family: the longest matching prefix wins), USD per
    million tokens; it overrides the table in budgets.prices, which stays the default."""

    model = models.CharField(max_length=100, unique=True)
    input = models.DecimalField(max_digits=10, decimal_places=4)
    output = models.DecimalField(max_digits=10, decimal_places=4)
    cache_read = models.DecimalField(max_digits=10, decimal_places=4)
    cache_write = models.DecimalField(max_digits=10, decimal_places=4)  # 5-minute writes
    # 1-hour writes; blank: Anthropic's rule, 2 × input (budgets.prices.Price.write_1h)
    cache_write_1h = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model"]

    def __str__(self) -> str:
        return f"price of {self.model}"

    @property
    def price(self) -> Price:
        return Price(self.input, self.output, self.cache_read, self.cache_write, self.cache_write_1h)
