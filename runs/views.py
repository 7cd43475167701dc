"""Pages for runs: the live dashboard, a run, the controls, starting a run, history."""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef, QuerySet
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from budgets.units import format_tokens
from catalogue.markdown import render_markdown
from catalogue.models import Recipe
from catalogue.selectors import recipe_args
from catalogue.spec import Kind
from catalogue.views import _get_recipe_for_user
from runs import selectors, services
from runs.chains import chain_context
from runs.forks.lineage import lineage_context, passes_marked
from runs.forms import GrantForm, HistoryFilterForm, RunForm
from runs.live import fragments
from runs.models import Approval, Pass, PassResult, Run, Step
from runs.outlook import recipe_outlook
from runs.results import snapshots
from runs.results.report import plan_lines_from_snapshot
from runs.workbench import labels
from rysh_site.csv_export import csv_cell, csv_writer
from rysh_site.paths import UnsafePath, safe_child
from rysh_site.roles import require

TEXT_VIEW_LIMIT = 512 * 1024
HISTORY_PAGE_SIZE = 50
CHART_DAYS = 30
CSV_HEADER = [
    "run",
    "ended",
    "kind",
    "recipe",
    "duration",
    "passes",
    "tokens_counted",
    "cache_read",
    "cache_write",
    "input",
    "output",
    "cost_usd",
    "provider",
    "cause",
]


def _get_run_for_user(request: HttpRequest, pk: int, action: str = "view") -> Run:
    require(request.user, action)
    return get_object_or_404(Run, pk=pk)


@login_required
@vary_on_headers("HX-Request")
def dashboard(request: HttpRequest) -> HttpResponse:
    require(request.user, "view")
    template = fragments.HOME_FRAGMENTS if request.htmx else "runs/dashboard.html"
    return render(request, template, fragments.home_context(fragments.grants(request.user)))


@login_required
@vary_on_headers("HX-Request")
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run_for_user(request, pk)
    can = fragments.grants(request.user)
    context = {**fragments.run_context(run, can), "plan_lines": plan_lines_from_snapshot(run.plan)}
    template = fragments.RUN_FRAGMENTS if request.htmx else "runs/run_detail.html"
    if not request.htmx:  # the lineage is the page's, not pushed: it changes when a fork starts
        context.update(lineage_context(run, can), **chain_context(run))
        passes_marked(context["passes"], context["fork_points"])
    return render(request, template, context)


# -- controls: one small POST endpoint each ---------------------------------------------------


def _control(request: HttpRequest, pk: int, service: Callable[..., str | Run]) -> HttpResponse:
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


def _after_control(request: HttpRequest, run: Run, go: bool = False) -> HttpResponse:
    target = reverse("run_detail", args=[run.pk])
    if not request.htmx:
        return redirect(_same_site(request, request.POST.get("next")) or target)
    if go:
        return HttpResponseClientRedirect(target)
    # the fresh state of the run and the flash; the live push updates every other page
    run.refresh_from_db()
    return render(
        request, "runs/run_detail/_control_answer.html", fragments.run_context(run, fragments.grants(request.user))
    )


def _same_site(request: HttpRequest, url: str | None) -> str | None:
    """`next` only when it stays on this site: a control must not bounce a user elsewhere."""
    if url and url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return url
    return None


@login_required
@require_POST
@vary_on_headers("HX-Request")
def run_stop(request: HttpRequest, pk: int) -> HttpResponse:
    return _control(request, pk, services.run_stop)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    return _control(request, pk, services.run_cancel)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def run_continue(request: HttpRequest, pk: int) -> HttpResponse:
    return _control(request, pk, services.run_continue)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    return _control(request, pk, services.run_resume)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def run_land(request: HttpRequest, pk: int) -> HttpResponse:
    return _control(request, pk, services.run_land)


# -- approvals and the filmstrip ----------------------------------------------------------------


@login_required
@require_POST
@vary_on_headers("HX-Request")
def run_grant(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run_for_user(request, pk, "operate")
    form = GrantForm(request.POST)
    if not form.is_valid():
        messages.error(request, "grant refused: " + "; ".join(form.error_lines()))
        return _after_control(request, run)
    try:
        messages.success(request, services.run_grant(run=run, extra=form.grant(), user=request.user))
    except services.RunRefused as exc:
        messages.error(request, str(exc))
        return _after_control(request, run)
    return _after_control(request, run, go=True)  # the whole page: its plan lines changed


def _approval_answer(request: HttpRequest, pk: int, approval_pk: int, approved: bool) -> HttpResponse:
    run = _get_run_for_user(request, pk, "operate")
    approval = get_object_or_404(Approval, pk=approval_pk, run=run)
    try:
        said = services.approval_answer(
            approval=approval, user=request.user, approved=approved, reason=request.POST.get("reason", "")[:2000]
        )
    except services.RunRefused as exc:
        messages.error(request, str(exc))
        return _after_answer(request, run)
    messages.success(request, said)
    return _after_answer(request, run)


def _after_answer(request: HttpRequest, run: Run) -> HttpResponse:
    """Answered from the inbox: the inbox's fragments; from a run page: the run's."""
    if request.htmx and request.GET.get("from") == "inbox":
        return render(request, "runs/approvals/_answer.html", fragments.inbox_context(fragments.grants(request.user)))
    return _after_control(request, run)


@login_required
@vary_on_headers("HX-Request")
def approvals_inbox(request: HttpRequest) -> HttpResponse:
    """/approvals/: every pending approval across runs, live (ws/approvals/)."""
    require(request.user, "view")
    context = fragments.inbox_context(fragments.grants(request.user))
    if request.htmx:
        return render(request, "runs/approvals/_live.html", context)
    return render(request, "runs/approvals.html", context)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def approval_approve(request: HttpRequest, pk: int, approval_pk: int) -> HttpResponse:
    return _approval_answer(request, pk, approval_pk, approved=True)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def approval_reject(request: HttpRequest, pk: int, approval_pk: int) -> HttpResponse:
    return _approval_answer(request, pk, approval_pk, approved=False)


def _file_or_404(root: str | Path, name: str, missing: str) -> Path:
    """A file below root named from outside (a URL, a database row), or 404: never a way out."""
    try:
        target = safe_child(root, name)
    except UnsafePath:
        raise Http404(missing) from None
    if not target.is_file():
        raise Http404(missing)
    return target


@login_required
def step_screenshot(request: HttpRequest, pk: int, step_pk: int) -> FileResponse:
    run = _get_run_for_user(request, pk)
    step = get_object_or_404(Step, pk=step_pk, run_pass__run=run)
    target = _file_or_404(settings.RYSH_SCREENSHOTS_DIR, step.screenshot, "no screenshot for this step")
    return FileResponse(target.open("rb"), content_type="image/jpeg")


@login_required
def run_video(request: HttpRequest, pk: int, name: str) -> FileResponse:
    run = _get_run_for_user(request, pk)
    target = _file_or_404(Path(settings.RYSH_VIDEOS_DIR) / str(run.pk), name, "no such video")
    if target.suffix != ".webm":  # judged after links are followed: only the videos themselves
        raise Http404("no such video")
    return FileResponse(target.open("rb"), content_type="video/webm")


# -- starting a run ---------------------------------------------------------------------------


def _get_runnable_recipe(request: HttpRequest, kind: str, name: str, action: str) -> Recipe:
    recipe = _get_recipe_for_user(request, kind, name, action)
    if recipe.archived:
        raise Http404("this recipe was deleted from the repository")
    return recipe


def _run_form(request: HttpRequest, recipe: Recipe) -> RunForm:
    return RunForm(
        request.POST if request.method == "POST" else None, arg_names=recipe_args(recipe), web=recipe.kind == Kind.WEB
    )


@login_required
def run_new(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    recipe = _get_runnable_recipe(request, kind, name, "operate")
    form = _run_form(request, recipe)
    page = {"recipe": recipe, "form": form, **_before_start(recipe, request.user)}
    if request.method != "POST":
        return render(request, "runs/run_new.html", page)
    if form.is_valid():
        try:
            run = services.run_start(
                kind=kind,
                name_or_path=name,
                args=form.recipe_args(),
                user=request.user,
                headless=form.wants_headless(),
                base=form.base_ref(),
                catalogue_only=True,
            )
        except services.RunRefused as exc:
            form.add_error(None, str(exc))
            page["holder"] = exc.holder  # the run in the way, linked beside the refusal
        else:
            return redirect("run_detail", pk=run.pk)
    return render(request, "runs/run_new.html", page, status=400)


def _before_start(recipe: Recipe, user) -> dict[str, list[str]]:
    """The worst case against what each quota has left (this person's own quota too), and the
    recipe's models that have no price: said before anyone presses Run."""
    if recipe.good is None:
        return {"quota_lines": [], "price_warnings": []}
    lines, warnings = recipe_outlook(text=recipe.good.text, path=recipe.good.path, kind=recipe.kind, user_id=user.pk)
    return {"quota_lines": lines, "price_warnings": warnings}


@login_required
@require_POST
def run_preview(request: HttpRequest, kind: str, name: str) -> HttpResponse:
    recipe = _get_runnable_recipe(request, kind, name, "view")
    form = _run_form(request, recipe)
    try:
        preview = services.run_start(
            kind=kind,
            name_or_path=name,
            args=form.recipe_args(),
            user=request.user,
            dry_run=True,
            base=form.base_ref(),
            catalogue_only=True,
        )
        lines, error = preview.lines, ""
    except services.RunRefused as exc:
        lines, error = [], str(exc)
    return render(request, "runs/run_new/_preview.html", {"lines": lines, "error": error})


# -- results -------------------------------------------------------------------------------------


@login_required
def run_file(request: HttpRequest, pk: int, name: str) -> HttpResponse | FileResponse:
    run = _get_run_for_user(request, pk)
    handle, kept = _result_handle(run, name, _pass_number(request.GET.get("pass")))
    if request.GET.get("download"):
        return FileResponse(handle, as_attachment=True, filename=Path(name).name)
    with handle:
        head, truncated = _read_head(handle, TEXT_VIEW_LIMIT)
    binary = b"\0" in head
    # a cut can split a character: an unfinished one at the end is dropped, not shown as garbage
    text = "" if binary else codecs.getincrementaldecoder("utf-8")("replace").decode(head, final=not truncated)
    markdown = Path(name).suffix.lower() in (".md", ".markdown")
    rendered = render_markdown(text) if markdown and not binary else None
    return render(
        request,
        "runs/run_file.html",
        {
            "run": run,
            "name": name,
            "kept": kept,
            "text": text,
            "rendered": rendered,
            "truncated": truncated,
            "binary": binary,
            "limit_kb": TEXT_VIEW_LIMIT // 1024,
        },
    )


def _pass_number(raw: str | None) -> int | None:
    if raw is None:
        return None
    if not raw.isdigit():
        raise Http404("no such pass")
    return int(raw)


def _result_handle(run: Run, name: str, pass_number: int | None) -> tuple[BinaryIO, PassResult | None]:
    """The file as the run's snapshot kept it (pass `pass_number`'s, or the newest holding it);
    a run still going, or from before snapshots, reads its folder as it is now."""
    if pass_number is not None or (not run.is_active and snapshots.has_snapshots(run)):
        row = snapshots.snapshot_file(run, name, pass_number=pass_number)
        if row is None:
            raise Http404("no such result file")
        handle = snapshots.open_result(row)
        if handle is None:
            raise Http404(f"{name} was not kept: {row.size} bytes, over RYSH_SNAPSHOT_FILE_MAX_BYTES")
        return handle, row
    if not run.output_dir or run.snapshots_pruned_at:  # no folder: an empty root would mean the server's own
        raise Http404("no such result file")
    return _file_or_404(run.output_dir, name, "no such result file").open("rb"), None


def _read_head(handle: BinaryIO, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of a file, and whether it holds more: one byte past the limit is
    read to know, never the whole file (a result can be a huge or binary download)."""
    head = handle.read(limit + 1)
    return head[:limit], len(head) > limit


# -- history -------------------------------------------------------------------------------------


def _history_runs(form: HistoryFilterForm) -> QuerySet[Run]:
    """The finished runs the filters ask for; none while a filter is in error (a list that
    quietly ignored it would look filtered)."""
    if not form.is_valid():
        return Run.objects.none()
    return selectors.run_history(**form.cleaned_data)


# a run forks were made from: its row links its family (docs/forks.md)
_HAS_FORKS = Exists(Run.objects.filter(forked_from=OuterRef("pk")))


@login_required
def history(request: HttpRequest) -> HttpResponse:
    require(request.user, "view")
    form = HistoryFilterForm(request.GET)
    runs = _history_runs(form)
    since = timezone.localdate() - timedelta(days=CHART_DAYS - 1)
    return render(
        request,
        "runs/history.html",
        {
            "page": Paginator(runs.annotate(has_forks=_HAS_FORKS), HISTORY_PAGE_SIZE).get_page(request.GET.get("page")),
            "form": form,
            "chart": _day_chart(selectors.run_history_per_day(runs, since=since), since),
            "query": request.GET.urlencode(),
        },
        status=200 if form.is_valid() else 400,
    )


def _day_chart(per_day: list[dict], since: date) -> list[dict]:
    by_day = {row["day"]: row for row in per_day}
    days = [since + timedelta(days=i) for i in range(CHART_DAYS)]
    peak = max([r["tokens"] or 0 for r in per_day] + [1])
    peak_cost = max([float(r["cost"] or 0) for r in per_day] + [0.0001])
    bars = []
    for i, day in enumerate(days):
        row = by_day.get(day, {})
        tokens, cost = row.get("tokens") or 0, float(row.get("cost") or 0)
        height = 100 * tokens / peak
        bars.append(
            {
                "day": day,
                "x": i * 20,
                "h": height,
                "y": 110 - height,
                "tokens": tokens,
                "tokens_text": format_tokens(tokens),
                "cost": cost,
                "runs": row.get("n", 0),
                "cost_y": 110 - 100 * cost / peak_cost,
            }
        )
    return bars


def _csv_rows(runs: QuerySet[Run]) -> Iterator[str]:
    writer = csv_writer()
    yield writer.writerow(CSV_HEADER)
    for r in runs.iterator():
        yield writer.writerow(
            [
                r.pk,
                r.ended_at.isoformat() if r.ended_at else "",
                csv_cell(r.kind),
                csv_cell(r.name),
                r.duration_text,
                r.pass_number,
                r.tokens_counted,
                r.cache_read_tokens,
                r.cache_write_tokens,
                r.input_tokens,
                r.output_tokens,
                "" if r.cost is None else f"{r.cost:.6f}",
                csv_cell(r.provider),
                csv_cell(r.cause),  # text from outside (an error's message): never a formula
            ]
        )


@login_required
def history_csv(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    require(request.user, "view")
    form = HistoryFilterForm(request.GET)
    if not form.is_valid():  # the same answer as the page: no export of a filter it could not read
        return HttpResponse("\n".join(form.error_lines()) + "\n", status=400, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(_csv_rows(selectors.run_history(**form.cleaned_data)), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="rysh-history.csv"'
    return response


# -- verdict labels (docs/judge-workbench.md): people say whether the judge was right ---------------------------


@login_required
@require_POST
@vary_on_headers("HX-Request")
def verdict_label(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    """`judge` = right | wrong (with an optional `note`), or clear. Operators, editors, admins."""
    run = _get_run_for_user(request, pk, "label")
    run_pass = get_object_or_404(Pass, run=run, number=number)
    judge = request.POST.get("judge", "")
    try:
        messages.success(request, _label(run_pass, judge, request.POST.get("note", ""), request.user))
    except labels.LabelRefused as exc:
        messages.error(request, str(exc))
    if not request.htmx:  # the page works without JS: back to the pass's row
        return redirect(reverse("run_detail", args=[run.pk]) + f"#pass-{number}")
    return render(
        request, "runs/run_detail/_control_answer.html", fragments.run_context(run, fragments.grants(request.user))
    )


def _label(run_pass: Pass, judge: str, note: str, user) -> str:
    where = f"pass {run_pass.number} of run #{run_pass.run_id}"
    if judge == "clear":
        cleared = labels.verdict_label_clear(run_pass=run_pass, user=user)
        return f"{where}: label removed" if cleared else f"{where} had no label"
    if judge not in ("right", "wrong"):
        raise labels.LabelRefused("say whether the judge was right or wrong")
    labels.verdict_label_set(run_pass=run_pass, judge_right=judge == "right", note=note, user=user)
    return f"{where}: judge {judge}"
