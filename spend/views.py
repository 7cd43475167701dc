"""The spend pages: Spend (`/spend/`, its CSV `/spend.csv`), Quotas (`/quotas/`) and Prices
(`/prices/`; with an API key "Models and prices": the models the key can use, from the Models API). Everyone who can view reads them; only admins change quotas and prices, through
spend.services (which records each change in the audit log)."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from agents import models_api
from budgets.units import format_tokens
from catalogue.selectors import recipe_targets
from runs.quota_waits import runs_paused_on_quota
from runs.selectors import spend_rows
from rysh_site.csv_export import csv_cell, csv_writer
from rysh_site.roles import require, user_can
from spend import selectors, services
from spend.forms import PriceForm, QuotaForm, SpendFilterForm
from spend.models import ModelPrice, Quota, Scope
from spend.prices import price_of

CSV_COLUMNS = ["tokens_counted", "cache_read", "cost_usd", "unpriced_tokens", "calls"]  # after period, recipe|person


# -- the Spend page --------------------------------------------------------------------------------


@login_required
def spend(request: HttpRequest) -> HttpResponse:
    require(request.user, "view")
    form = SpendFilterForm(request.GET)
    context = {
        "form": form,
        "bars": selectors.quota_bars(),
        "waiting": runs_paused_on_quota(),
        "query": request.GET.urlencode(),
        "can_admin": user_can(request.user, "admin"),
        "toggles": _toggles(request),
    }
    if form.is_valid():
        f = form.filters()
        rows = spend_rows(**f)
        ranked = selectors.totals(rows)
        measure = form.cleaned_data["measure"]
        context |= {
            "f": f,
            "rows": rows,
            "totals": ranked,
            "grand": _grand(ranked),
            "chart": selectors.chart(
                rows, ranked, period=f["period"], since=f["since"], until=f["until"], measure=measure
            ),
            "measure": measure,
        }
    return render(request, "spend/spend.html", context, status=200 if form.is_valid() else 400)


TOGGLES = (
    ("by", [("recipe", "by recipe"), ("person", "by person")]),
    ("period", [("day", "per day"), ("month", "per month")]),
    ("measure", [("tokens", "tokens"), ("dollars", "dollars")]),
)


def _toggles(request: HttpRequest) -> list[list[tuple[str, str, bool]]]:
    """Links that switch one choice and keep the others (a page that needs no script). A
    period switch drops the day range, which was chosen for the other period."""
    groups = []
    for name, choices in TOGGLES:
        group = []
        for value, label in choices:
            query = request.GET.copy()
            query[name] = value
            if name == "period":
                query.pop("since", None)
                query.pop("until", None)
            on = request.GET.get(name, choices[0][0]) == value
            group.append((label, query.urlencode(), on))
        groups.append(group)
    return groups


def _grand(ranked: list[selectors.Total]) -> selectors.Total:
    grand = selectors.Total("all")
    for t in ranked:
        grand.add(
            {
                "tokens": t.tokens,
                "cache_read": t.cache_read,
                "cost": t.cost,
                "unpriced": t.unpriced,
                "offline": t.offline,
                "calls": t.calls,
            }
        )
    return grand


def _csv_rows(rows: list[dict], by: str, period: str) -> Iterator[str]:
    writer = csv_writer()
    yield writer.writerow(["period", by, *CSV_COLUMNS])
    for r in rows:
        when = r["bucket"].isoformat() if period == "day" else r["bucket"].strftime("%Y-%m")
        cost = "" if r["cost"] is None else f"{r['cost']:.6f}"
        cells = [when, r["who"], r["tokens"] or 0, r["cache_read"] or 0, cost, r["unpriced"] or 0, r["calls"]]
        yield writer.writerow([csv_cell(c) for c in cells])


@login_required
def spend_csv(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    require(request.user, "view")
    form = SpendFilterForm(request.GET)
    if not form.is_valid():  # the same answer as the page: no export of a filter it could not read
        return HttpResponse("\n".join(form.error_lines()) + "\n", status=400, content_type="text/plain; charset=utf-8")
    f = form.filters()
    response = StreamingHttpResponse(_csv_rows(spend_rows(**f), f["by"], f["period"]), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="rysh-spend.csv"'
    return response


# -- quotas ----------------------------------------------------------------------------------------


def _quota_form(request: HttpRequest, data=None, initial=None) -> QuotaForm:
    return QuotaForm(data, initial=initial, recipes=recipe_targets(), people=selectors.people())


def _initial(quota: Quota | None) -> dict:
    """The form filled with a quota to change (the Change link: `?edit=<id>`)."""
    if quota is None:
        return {"scope": Scope.INSTALLATION, "window": "day"}
    return {
        "scope": quota.scope,
        "recipe": quota.target,
        "user": quota.user_id,
        "window": quota.window,
        "tokens": format_tokens(quota.tokens) if quota.tokens is not None else "",
        "dollars": quota.dollars,
    }


# which field a service refusal is about, by the words its message starts with
ERROR_FIELDS = (("scope", "scope"), ("window", "window"), ("a recipe quota", "recipe"), ("a user quota", "user"))


def _error_field(message: str) -> str | None:
    for start, name in ERROR_FIELDS:
        if message.startswith(start):
            return name
    return "tokens" if "tokens" in message or "dollars" in message else None


@login_required
@require_http_methods(["GET", "POST"])
def quota_list(request: HttpRequest) -> HttpResponse:
    require(request.user, "view")
    if request.method == "POST":
        require(request.user, "admin")
        form = _quota_form(request, request.POST)
        if form.is_valid() and _quota_save(request, form):
            return redirect("quota_list")
    else:
        editing = request.GET.get("edit", "")
        quota = Quota.objects.filter(pk=editing).first() if editing.isdigit() else None
        form = _quota_form(request, initial=_initial(quota))
    can_admin = user_can(request.user, "admin")
    context = {"bars": selectors.quota_bars(), "form": form if can_admin else None, "can_admin": can_admin}
    return render(request, "spend/quotas.html", context, status=400 if form.errors else 200)


def _quota_save(request: HttpRequest, form: QuotaForm) -> bool:
    data = form.cleaned_data
    try:
        quota = services.quota_set(
            scope=data["scope"],
            window=data["window"],
            tokens=data["tokens"],
            dollars=data["dollars"],
            target=data["recipe"] if data["scope"] == Scope.RECIPE else "",
            user=data["user"] if data["scope"] == Scope.USER else None,
            actor=request.user,
        )
    except services.QuotaError as exc:
        form.add_error(_error_field(str(exc)), str(exc))
        return False
    messages.success(request, f"{quota.name} set to {quota.limit_text()}")
    return True


@login_required
@require_http_methods(["GET", "POST"])
def quota_remove(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks to confirm; POST removes (admins)."""
    require(request.user, "admin")
    quota = get_object_or_404(Quota.objects.select_related("user"), pk=pk)
    if request.method == "POST":
        messages.success(request, services.quota_remove(quota=quota, actor=request.user))
        return redirect("quota_list")
    return render(request, "spend/confirm.html", {"what": quota.name, "back": "quota_list"})


# -- prices ----------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def price_list(request: HttpRequest) -> HttpResponse:
    require(request.user, "view")
    if request.method == "POST":
        require(request.user, "admin")
        form = PriceForm(request.POST)
        if form.is_valid() and _price_save(request, form):
            return redirect("price_list")
    else:
        form = PriceForm(initial=_price_initial(request.GET.get("model", "")[:100]))
    rows = selectors.price_rows()
    can_admin = user_can(request.user, "admin")
    listed = models_api.available_models() if models_api.has_key() else None
    context = {
        "listed": listed,  # None without a key: the page is the price list alone
        "model_rows": selectors.api_model_rows(listed.models) if listed else [],
        "cache_minutes": models_api.CACHE_SECONDS // 60,
        "rows": rows,
        "sdk_rows": selectors.sdk_price_rows(rows),
        "form": form if can_admin else None,
        "can_admin": can_admin,
    }
    return render(request, "spend/prices.html", context, status=400 if form.errors else 200)


def _price_initial(model: str) -> dict:
    """The form for the Change / Set a price links: the model, with the price it has now."""
    price = price_of(model) if model else None
    if price is None:
        return {"model": model}
    rates = {"input": price.input, "output": price.output, "cache_read": price.cache_read}
    return {"model": model, **rates, "cache_write": price.cache_write, "cache_write_1h": price.write_1h}


def _price_save(request: HttpRequest, form: PriceForm) -> bool:
    try:
        row = services.price_set(**form.cleaned_data, actor=request.user)
    except services.QuotaError as exc:
        message = str(exc)
        form.add_error("model" if message.startswith("model") else None, message)
        return False
    messages.success(request, f"price of {row.model} set")
    return True


@login_required
@require_http_methods(["GET", "POST"])
def price_remove(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks to confirm; POST removes an admin's price (the built-in table applies again)."""
    require(request.user, "admin")
    row = get_object_or_404(ModelPrice, pk=pk)
    if request.method == "POST":
        try:
            messages.success(request, services.price_remove(model=row.model, actor=request.user))
        except services.QuotaError as exc:  # removed by someone else meanwhile
            messages.error(request, str(exc))
        return redirect("price_list")
    return render(request, "spend/confirm.html", {"what": f"the admin price of {row.model}", "back": "price_list"})
