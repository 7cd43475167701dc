"""The fork pages (docs/forks.md): the fork form, "Propose this edit", the compare page and a run's
family tree. One small view each; the run page's lineage comes from runs.forks.lineage."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from reviews.services import ReviewError
from runs import forks
from runs.forks.compare import CompareRefused, runs_compare
from runs.forks.lineage import edits_from, fork_points_said, parent_values, run_family
from runs.forks.proposal import EditRefused, fork_propose
from runs.models import Run
from rysh_site.roles import require

EDIT_FIELDS = ("prompt", "iterate_with", "until", "model", "effort", "budget")


class ForkForm(forms.Form):
    """Where the fork starts and what it changes; every edit field starts from the parent's
    recipe version (strip=False: a prompt reaches the model exactly as typed)."""

    pass_number = forms.IntegerField(min_value=0, label="pass", help_text="0: the start")
    redo = forms.BooleanField(required=False, label="redo this pass (start from the end of the one before)")
    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 12}), strip=False, required=False)
    iterate_with = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), strip=False, required=False)
    until = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), strip=False, required=False)
    model = forms.CharField(max_length=100, required=False)
    effort = forms.CharField(max_length=10, required=False)
    budget = forms.CharField(max_length=40, required=False, help_text="the whole loop's, e.g. 20b")
    refusal = ""  # a plan refused on a GET (the form is not bound: no field errors)

    def edit_values(self) -> dict[str, str]:
        return {k: self.cleaned_data.get(k) or "" for k in EDIT_FIELDS}


def _get_run(request: HttpRequest, pk: int, action: str) -> Run:
    require(request.user, action)
    return get_object_or_404(Run.objects.select_related("forked_from", "recipe"), pk=pk)


def _point(raw: str | None) -> int | None:
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


@login_required
def run_fork_new(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the form for "Fork from pass N" (?pass=N) or "Redo pass N" (&redo=1) with the plan;
    POST: preview again, or start the fork (a fork spends money: who may start a run may fork)."""
    parent = _get_run(request, pk, "operate")
    initial = {**parent_values(parent), "pass_number": _point(request.GET.get("pass")), "redo": "redo" in request.GET}
    form = ForkForm(request.POST if request.method == "POST" else None, initial=initial)
    page = {
        "parent": parent,
        "form": form,
        "points": fork_points_said(parent),
        "plan": None,
        "caveat": forks.fork_caveat(parent),
    }
    if request.method != "POST":
        if initial["pass_number"]:
            page["plan"] = _plan(form, parent, initial["pass_number"], bool(initial["redo"]), None)
        return render(request, "runs/fork_new.html", page)
    if form.is_valid():
        number, redo = form.cleaned_data["pass_number"], form.cleaned_data["redo"]
        edits = edits_from(form.edit_values(), parent)
        page["plan"] = _plan(form, parent, number, redo, edits)
        if page["plan"] is not None and request.POST.get("action") == "start":
            try:
                run = forks.run_fork(run=parent, pass_number=number, user=request.user, redo=redo, edits=edits)
            except forks.ForkRefused as exc:
                _refused(form, exc)
            else:
                return redirect("run_detail", pk=run.pk)
    return render(request, "runs/fork_new.html", page, status=400 if form.errors else 200)


def _plan(form: ForkForm, parent: Run, number: int, redo: bool, edits) -> forks.ForkPlan | None:
    try:
        return forks.fork_plan(run=parent, pass_number=number, redo=redo, edits=edits)
    except forks.ForkRefused as exc:
        _refused(form, exc)
        return None


def _refused(form: ForkForm, exc: forks.ForkRefused) -> None:
    """The refusal next to the field it is about (pass_number for `pass`), else above the form."""
    name = "pass_number" if exc.field in ("pass", "pass_number") else exc.field
    if not form.is_bound:
        form.refusal = str(exc)  # a GET shows the plan's refusal without binding the form
        return
    form.add_error(name if name in form.fields else None, str(exc))


@login_required
@require_POST
def run_propose(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Propose this edit": a change request of the recipe with the fork's edits, for editors."""
    run = _get_run(request, pk, "edit")
    try:
        change = fork_propose(run=run, user=request.user)
    except (EditRefused, ReviewError) as exc:
        messages.error(request, str(exc))
        return redirect("run_detail", pk=run.pk)
    return redirect("change_detail", pk=change.pk)


@login_required
def run_compare(request: HttpRequest, pk: int) -> HttpResponse:
    """Run `pk` beside another run of its recipe (?with=ID); a fork's default: its parent."""
    run = _get_run(request, pk, "view")
    other_id = _point(request.GET.get("with")) or run.forked_from_id
    choices = Run.objects.filter(target=run.target).exclude(pk=run.pk).order_by("-pk")[:50]
    page = {"run": run, "choices": choices, "shown": None, "refused": ""}
    if other_id is None:
        page["refused"] = "choose a run of this recipe to compare with"
        return render(request, "runs/compare.html", page)
    other = Run.objects.filter(pk=other_id).first()
    if other is None:
        raise Http404(f"no run #{other_id}")
    try:
        # the older run on the left: a fork's parent is A, the fork B
        a, b = (other, run) if other.pk < run.pk else (run, other)
        page["shown"] = runs_compare(a, b)
    except CompareRefused as exc:
        page["refused"] = str(exc)
        return render(request, "runs/compare.html", page, status=400)
    return render(request, "runs/compare.html", page)


@login_required
def run_family_page(request: HttpRequest, pk: int) -> HttpResponse:
    run = _get_run(request, pk, "view")
    return render(request, "runs/family.html", {"run": run, "family": run_family(run)})
