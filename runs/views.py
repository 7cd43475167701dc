"""Pages for runs: the live dashboard, a run, the controls, starting a run, history."""
from __future__ import annotations

import csv
from datetime import date, datetime, time, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from runs import live, services
from catalogue.markdown import render_markdown
from runs.models import Approval, Run, Step
from catalogue.models import Recipe
from runs.models import RunState
from catalogue.recipe import RecipeError, parse_recipe
from runs.report import plan_lines_from_snapshot
from rysh_site.roles import require
from catalogue.views import _get_recipe_for_user
from budgets.units import format_tokens

TEXT_VIEW_LIMIT = 512 * 1024


def _get_run_for_user(request, pk: int, action: str = "view") -> Run:
    require(request.user, action)
    return get_object_or_404(Run, pk=pk)


@login_required
def dashboard(request):
    require(request.user, "view")
    context = live.home_context(request.user)
    template = "runs/_home_live.html" if request.htmx else "runs/dashboard.html"
    return render(request, template, context)


@login_required
def run_detail(request, pk: int):
    run = _get_run_for_user(request, pk)
    context = {**live.run_context(run, request.user), "plan_lines": plan_lines_from_snapshot(run.plan)}
    template = "runs/_run_live.html" if request.htmx else "runs/run_detail.html"
    return render(request, template, context)


# -- controls: one small POST endpoint each ---------------------------------------------------

def _control(request, pk: int, service) -> HttpResponse:
    run = _get_run_for_user(request, pk, "operate")
    try:
        result = service(run=run, user=request.user)
    except services.RunRefused as exc:
        messages.error(request, str(exc))
        return _after_control(request, run)
    if isinstance(result, Run):  # resume starts a new run: go there
        messages.success(request, f"run #{result.pk} started, resuming run #{run.pk}")
        return _after_control(request, result, go=True)
    messages.success(request, result)
    return _after_control(request, run)


def _after_control(request, run: Run, go: bool = False) -> HttpResponse:
    target = reverse("run_detail", args=[run.pk])
    if request.htmx:
        if go:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = target
            return response
        # the fresh state of the run and the flash; the live push updates every other page
        run.refresh_from_db()
        return render(request, "runs/_control_answer.html", {**live.run_context(run, request.user)})
    return redirect(request.POST.get("next") or target)


@login_required
@require_POST
def run_stop(request, pk: int):
    return _control(request, pk, services.run_stop)


@login_required
@require_POST
def run_cancel(request, pk: int):
    return _control(request, pk, services.run_cancel)


@login_required
@require_POST
def run_continue(request, pk: int):
    return _control(request, pk, services.run_continue)


@login_required
@require_POST
def run_resume(request, pk: int):
    return _control(request, pk, services.run_resume)


@login_required
@require_POST
def run_land(request, pk: int):
    return _control(request, pk, services.run_land)


# -- approvals and the filmstrip ----------------------------------------------------------------

def _approval_answer(request, pk: int, approval_pk: int, approved: bool) -> HttpResponse:
    run = _get_run_for_user(request, pk, "operate")
    approval = get_object_or_404(Approval, pk=approval_pk, run=run)
    try:
        said = services.approval_answer(approval=approval, user=request.user, approved=approved,
                                        reason=request.POST.get("reason", "")[:2000])
    except services.RunRefused as exc:
        messages.error(request, str(exc))
        return _after_control(request, run)
    messages.success(request, said)
    return _after_control(request, run)


@login_required
@require_POST
def approval_approve(request, pk: int, approval_pk: int):
    return _approval_answer(request, pk, approval_pk, approved=True)


@login_required
@require_POST
def approval_reject(request, pk: int, approval_pk: int):
    return _approval_answer(request, pk, approval_pk, approved=False)


@login_required
def step_screenshot(request, pk: int, step_pk: int):
    run = _get_run_for_user(request, pk)
    step = get_object_or_404(Step, pk=step_pk, run_pass__run=run)
    root = Path(settings.RYSH_SCREENSHOTS_DIR).resolve()
    target = (root / step.screenshot).resolve() if step.screenshot else root
    if root not in target.parents or not target.is_file():
        raise Http404("no screenshot for this step")
    return FileResponse(target.open("rb"), content_type="image/jpeg")


@login_required
def run_video(request, pk: int, name: str):
    run = _get_run_for_user(request, pk)
    root = (Path(settings.RYSH_VIDEOS_DIR) / str(run.pk)).resolve()
    target = (root / name).resolve()
    if root not in target.parents or not target.is_file() or target.suffix != ".webm":
        raise Http404("no such video")
    return FileResponse(target.open("rb"), content_type="video/webm")


# -- starting a run ---------------------------------------------------------------------------

def _get_runnable_recipe(request, kind: str, name: str, action: str) -> Recipe:
    recipe = _get_recipe_for_user(request, kind, name, action)
    if recipe.archived:
        raise Http404("this recipe was deleted from the repository")
    return recipe


def _run_form(request, recipe: Recipe) -> dict:
    spec_args = []
    if recipe.good is not None:
        try:
            spec_args = list(parse_recipe(recipe.good.text, path=recipe.good.path, kind=recipe.kind).args)
        except RecipeError:
            spec_args = []
    values = [request.POST.get(f"arg_{i}", "") for i in range(len(spec_args))]
    return {"recipe": recipe, "fields": list(zip(range(len(spec_args)), spec_args, values)),
            "headless": request.POST.get("headless", "on") == "on" if request.method == "POST" else True,
            "args": values}


@login_required
def run_new(request, kind: str, name: str):
    recipe = _get_runnable_recipe(request, kind, name, "operate")
    form = _run_form(request, recipe)
    if request.method == "POST":
        try:
            run = services.run_start(kind=kind, name_or_path=name, args=form["args"], user=request.user,
                                     headless=form["headless"])
        except services.RunRefused as exc:
            form["error"] = str(exc)
            return render(request, "runs/run_new.html", form, status=400)
        return redirect("run_detail", pk=run.pk)
    return render(request, "runs/run_new.html", form)


@login_required
@require_POST
def run_preview(request, kind: str, name: str):
    recipe = _get_runnable_recipe(request, kind, name, "view")
    form = _run_form(request, recipe)
    try:
        preview = services.run_start(kind=kind, name_or_path=name, args=form["args"], dry_run=True)
        lines, error = preview.lines, ""
    except services.RunRefused as exc:
        lines, error = [], str(exc)
    return render(request, "runs/_run_preview.html", {"lines": lines, "error": error})


# -- results -------------------------------------------------------------------------------------

@login_required
def run_file(request, pk: int, name: str):
    run = _get_run_for_user(request, pk)
    root = Path(run.output_dir).resolve()
    target = (root / name).resolve()
    if root not in target.parents or not target.is_file():
        raise Http404("no such result file")
    if request.GET.get("download"):
        return FileResponse(target.open("rb"), as_attachment=True, filename=target.name)
    data = target.read_bytes()[:TEXT_VIEW_LIMIT]
    text = data.decode("utf-8", errors="replace")
    rendered = render_markdown(text) if target.suffix.lower() in (".md", ".markdown") else None
    return render(request, "runs/run_file.html", {
        "run": run, "name": name, "text": text, "rendered": rendered,
        "truncated": target.stat().st_size > TEXT_VIEW_LIMIT})


# -- history -------------------------------------------------------------------------------------

def _history_query(request):
    runs = Run.objects.filter(state=RunState.FINISHED)
    f = {k: request.GET.get(k, "").strip() for k in ("recipe", "kind", "cause", "since", "until")}
    if f["recipe"]:
        runs = runs.filter(name__icontains=f["recipe"])
    if f["kind"] in ("web", "task"):
        runs = runs.filter(kind=f["kind"])
    if f["cause"]:
        runs = runs.filter(cause__icontains=f["cause"])
    for key, lookup in (("since", "ended_at__date__gte"), ("until", "ended_at__date__lte")):
        try:
            if f[key]:
                runs = runs.filter(**{lookup: date.fromisoformat(f[key])})
        except ValueError:
            f[key] = ""
    return runs.order_by("-ended_at", "-id"), f


@login_required
def history(request):
    require(request.user, "view")
    runs, filters = _history_query(request)
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    since = timezone.localdate() - timedelta(days=29)
    since_at = timezone.make_aware(datetime.combine(since, time.min))  # a range the index can use
    per_day = list(runs.filter(ended_at__gte=since_at).annotate(day=TruncDate("ended_at"))
                   .values("day").annotate(tokens=Sum("tokens_counted"), cost=Sum("cost"), n=Count("id"))
                   .order_by("day"))
    return render(request, "runs/history.html", {
        "page": page, "filters": filters, "chart": _day_chart(per_day, since),
        "query": request.GET.urlencode()})


def _day_chart(per_day: list[dict], since: date) -> list[dict]:
    by_day = {row["day"]: row for row in per_day}
    days = [since + timedelta(days=i) for i in range(30)]
    peak = max([r["tokens"] or 0 for r in per_day] + [1])
    peak_cost = max([float(r["cost"] or 0) for r in per_day] + [0.0001])
    bars = []
    for i, day in enumerate(days):
        row = by_day.get(day, {})
        tokens, cost = row.get("tokens") or 0, float(row.get("cost") or 0)
        height = 100 * tokens / peak
        bars.append({"day": day, "x": i * 20, "h": height, "y": 110 - height, "tokens": tokens,
                     "tokens_text": format_tokens(tokens), "cost": cost, "runs": row.get("n", 0),
                     "cost_y": 110 - 100 * cost / peak_cost})
    return bars


class _Echo:
    def write(self, value):
        return value


@login_required
def history_csv(request):
    require(request.user, "view")
    runs, _ = _history_query(request)
    writer = csv.writer(_Echo())
    header = ["run", "ended", "kind", "recipe", "duration", "passes", "tokens_counted", "cache_read",
              "cache_write", "input", "output", "cost_usd", "provider", "cause"]

    def rows():
        yield writer.writerow(header)
        for r in runs.iterator():
            yield writer.writerow([r.pk, r.ended_at.isoformat() if r.ended_at else "", r.kind, r.name,
                                   r.duration_text, r.pass_number, r.tokens_counted, r.cache_read_tokens,
                                   r.cache_write_tokens, r.input_tokens, r.output_tokens,
                                   "" if r.cost is None else f"{r.cost:.6f}", r.provider, r.cause])

    response = StreamingHttpResponse(rows(), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="rysh-history.csv"'
    return response
