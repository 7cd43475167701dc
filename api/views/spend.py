"""/api/spend and /api/quotas: what the Spend page shows, read only. Scope: read."""

from __future__ import annotations

from datetime import date, datetime

from django.http import HttpRequest
from ninja import Router, Schema

from api.views.common import ApiError, acting
from budgets.quota import from_micros
from runs.selectors import spend_rows
from spend.forms import SpendFilterForm
from spend.selectors import quota_bars, totals

router = Router(tags=["spend"])


class SpendRowOut(Schema):
    bucket: date
    who: str
    tokens: int | None
    cache_read: int | None
    cost: str | None
    calls: int
    unpriced: int | None
    offline: int | None


class SpendTotalOut(Schema):
    who: str
    tokens: int
    cost: str | None
    calls: int
    cache_read: int
    unpriced: int
    offline: int


class SpendOut(Schema):
    by: str
    period: str
    since: date
    until: date
    rows: list[SpendRowOut]
    totals: list[SpendTotalOut]


class TokensOut(Schema):
    limit: int | None
    used: int
    reserved: int
    left: int | None


class DollarsOut(Schema):
    limit: str | None
    used: str | None
    reserved: str | None
    left: str | None


class QuotaOut(Schema):
    id: int
    quota: str
    scope: str
    target: str
    user: str | None
    window: str
    tokens: TokensOut
    dollars: DollarsOut
    full: bool
    resets_at: datetime | None


class QuotasOut(Schema):
    quotas: list[QuotaOut]


def _money(micros: int | None) -> str | None:
    return None if micros is None else str(from_micros(micros))


@router.get("/spend", response=SpendOut)
def spend(request: HttpRequest, by: str = "recipe", period: str = "day", since: str = "", until: str = ""):
    """Counted tokens, dollars and calls per day or month and recipe or person (`by`), from
    `since` to `until` (YYYY-MM-DD; the last 30 days per day, 12 months per month, by
    default), with totals. Scope: read."""
    with acting(request, "read"):
        form = SpendFilterForm({"by": by, "period": period, "since": since, "until": until})
        if not form.is_valid():
            errors = [{"field": name, "message": f"{name}: {' '.join(msgs)}"} for name, msgs in form.errors.items()]
            raise ApiError(400, errors[0]["message"], errors=errors)
        f = form.filters()
        rows = spend_rows(**f)
        return {
            "by": f["by"],
            "period": f["period"],
            "since": f["since"],
            "until": f["until"],
            "rows": [{**row, "cost": str(row["cost"]) if row["cost"] is not None else None} for row in rows],
            "totals": [
                {
                    "who": t.who,
                    "tokens": t.tokens,
                    "cost": str(t.cost) if t.cost is not None else None,
                    "calls": t.calls,
                    "cache_read": t.cache_read,
                    "unpriced": t.unpriced,
                    "offline": t.offline,
                }
                for t in totals(rows)
            ],
        }


@router.get("/quotas", response=QuotasOut)
def quotas(request: HttpRequest):
    """Every quota in its current window: limits, used, reserved for calls in flight, left,
    and when the window resets. Scope: read."""
    with acting(request, "read"):
        answer = []
        for bar in quota_bars():
            q, s = bar.quota, bar.quota.standing
            answer.append(
                {
                    "id": q.pk,
                    "quota": str(q),
                    "scope": q.scope,
                    "target": q.target,
                    "user": q.user.get_username() if q.user else None,
                    "window": q.window,
                    "tokens": {
                        "limit": q.tokens,
                        "used": s.used_tokens,
                        "reserved": s.reserved_tokens,
                        "left": s.tokens_left,
                    },
                    "dollars": {
                        "limit": _money(q.micros),
                        "used": _money(s.used_micros),
                        "reserved": _money(s.reserved_micros),
                        "left": _money(s.micros_left),
                    },
                    "full": bar.full,
                    "resets_at": bar.resets_at,
                }
            )
        return {"quotas": answer}
