"""Named states (docs/running-loops.md): every pause reason and event kind the code writes is a
member of runs.states, and the controls the pages and the API show are exactly the ones the
services accept."""

import ast
import itertools
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from budgets.plan import Grant
from runs import services
from runs.models import Run
from runs.services import RunRefused
from runs.states import (
    Control,
    EventKind,
    PauseReason,
    Phase,
    RunState,
    allowed_controls,
    cancel_asked,
    interrupted_text,
    interruption,
)
from spend.quotas import QUOTA_PAUSE

ROOT = Path(django_settings.BASE_DIR)
SKIP = {".venv", "tests", "migrations", "node_modules", "site", "bench"}


def product_sources():
    for path in ROOT.rglob("*.py"):
        if not SKIP.intersection(path.relative_to(ROOT).parts):
            yield path, ast.parse(path.read_text(), filename=str(path))


def written(tree, *, callee: str, position: int):
    """The argument at `position` of each call to `<something>.callee(...)` or `callee(...)`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and len(node.args) > position:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name == callee:
                yield node.args[position]


def named(node, members: type) -> str | None:
    """The word a literal or a `Members.NAME` stands for; None for anything computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == members.__name__:
        return getattr(members, node.attr).value
    return None


def test_it_knows_every_event_kind_the_code_records():
    seen = set()
    for path, tree in product_sources():
        for arg in written(tree, callee="record", position=1):
            word = named(arg, EventKind)
            if word is not None:
                assert word in EventKind.values, f"{path}:{arg.lineno}: event kind {word!r} is not an EventKind"
                seen.add(word)
    assert {"paused", "control", "note", "step", "finished"} <= seen  # the scan found the writers


def test_it_knows_every_pause_reason_the_code_writes():
    seen = set()
    for path, tree in product_sources():
        # a collaborator's self._pause, a stage's ctx.pause, an outcome's Pause(...) (runs/engine/)
        reasons = [arg for callee in ("_pause", "pause", "Pause") for arg in written(tree, callee=callee, position=0)]
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "pause_reason":
                reasons.append(node.value)
        for arg in reasons:
            word = named(arg, PauseReason)
            if word:
                assert PauseReason.is_known(word), f"{path}:{arg.lineno}: pause reason {word!r} is not a PauseReason"
                seen.add(word)
    assert {"cancelled", "step cap", "worker lost"} <= seen


def test_it_keeps_the_stored_words():
    assert PauseReason.values == ["cancelled", "step cap", "worker lost"]
    assert PauseReason.is_quota("quota: installation") and QUOTA_PAUSE == "quota:"
    assert not PauseReason.is_known("canceled")
    assert [c.value for c in Control] == ["", "stop", "cancel", "land"]


WITH_WRAP_UP = {"passes": 2, "split": {"task": {"tokens": 900}, "takeover": {"tokens": 300}}}
WITHOUT = {"passes": 2, "split": {"task": {"tokens": 900}}}
counter = itertools.count()

run_states = st.fixed_dictionaries(
    {
        "state": st.sampled_from(RunState.values),
        "phase": st.sampled_from(["", *Phase.values]),
        "control": st.sampled_from(Control.values),
        "pause_reason": st.sampled_from(["", *PauseReason.values, "quota: user"]),
        "plan": st.sampled_from([WITH_WRAP_UP, WITHOUT]),
        "cause": st.sampled_from(["", "budget exhausted", "stopped by user", "fulfilled: done"]),
    }
)


def a_run(fields, folder) -> Run:
    n = next(counter)
    return Run.objects.create(
        kind="task",
        name=f"s{n}",
        target=f"task/s{n}",
        recipe_path="x.md",
        recipe_text="x",
        provider="scripted",
        output_dir=str(folder),
        pass_number=1,
        **fields,
    )


def accepted(control: str, run: Run) -> bool:
    act = {
        "stop": services.run_stop,
        "cancel": services.run_cancel,
        "land": services.run_land,
        "continue": services.run_continue,
        "grant": lambda *, run: services.run_grant(run=run, extra=Grant(passes=1)),
    }[control]
    try:
        act(run=run)
    except RunRefused as exc:
        if control == "grant" and "has not ended" not in str(exc) and "ended at an outer ceiling" not in str(exc):
            return True  # refused past the state's gate (its recipe, its suite): the state allowed it
        return False
    return True


@pytest.mark.django_db
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=run_states, control=st.sampled_from(["stop", "cancel", "land", "continue", "grant"]))
@example(
    fields=dict(state="running", phase="task", control="", pause_reason="", plan=WITH_WRAP_UP, cause=""), control="land"
)
@example(
    fields=dict(state="running", phase="task", control="land", pause_reason="", plan=WITH_WRAP_UP, cause=""),
    control="land",
)
@example(
    fields=dict(state="running", phase="task", control="stop", pause_reason="", plan=WITH_WRAP_UP, cause=""),
    control="land",
)
@example(
    fields=dict(state="running", phase="task", control="", pause_reason="", plan=WITHOUT, cause=""), control="land"
)
@example(
    fields=dict(state="running", phase="wrap-up", control="", pause_reason="", plan=WITH_WRAP_UP, cause=""),
    control="land",
)
@example(
    fields=dict(state="awaiting approval", phase="task", control="", pause_reason="", plan=WITH_WRAP_UP, cause=""),
    control="land",
)
@example(
    fields=dict(state="queued", phase="", control="", pause_reason="", plan=WITH_WRAP_UP, cause=""), control="land"
)
@example(
    fields=dict(state="queued", phase="", control="", pause_reason="", plan=WITH_WRAP_UP, cause=""), control="cancel"
)
@example(
    fields=dict(state="queued", phase="", control="", pause_reason="", plan=WITH_WRAP_UP, cause=""), control="stop"
)
@example(
    fields=dict(state="awaiting approval", phase="task", control="", pause_reason="", plan=WITH_WRAP_UP, cause=""),
    control="cancel",
)
@example(
    fields=dict(state="paused", phase="", control="", pause_reason="cancelled", plan=WITH_WRAP_UP, cause=""),
    control="cancel",
)
@example(
    fields=dict(state="paused", phase="", control="", pause_reason="step cap", plan=WITH_WRAP_UP, cause=""),
    control="continue",
)
@example(
    fields=dict(state="running", phase="task", control="", pause_reason="", plan=WITH_WRAP_UP, cause=""),
    control="continue",
)
@example(
    fields=dict(state="finished", phase="", control="", pause_reason="", plan=WITH_WRAP_UP, cause="fulfilled: done"),
    control="stop",
)
@example(
    fields=dict(state="finished", phase="", control="", pause_reason="", plan=WITH_WRAP_UP, cause="budget exhausted"),
    control="grant",
)
@example(
    fields=dict(state="finished", phase="", control="", pause_reason="", plan=WITH_WRAP_UP, cause="stopped by user"),
    control="grant",
)
@example(
    fields=dict(state="paused", phase="", control="", pause_reason="quota: user", plan=WITH_WRAP_UP, cause=""),
    control="grant",
)
@example(
    fields=dict(state="paused", phase="", control="", pause_reason="worker lost", plan=WITH_WRAP_UP, cause=""),
    control="stop",
)
def test_it_accepts_exactly_the_controls_it_shows(fields, control, tmp_path):
    with transaction.atomic():
        run = a_run(fields, tmp_path)
        shown = control in allowed_controls(run)
        assert accepted(control, run) == shown, (fields, control, allowed_controls(run))
        transaction.set_rollback(True)


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=run_states)
def test_it_orders_and_bounds_the_controls(fields, tmp_path):
    with transaction.atomic():
        run = a_run(fields, tmp_path)
        shown = allowed_controls(run)
        assert len(shown) == len(set(shown)) and set(shown) <= {"land", "stop", "cancel", "continue", "resume", "grant"}
        assert ("stop" in shown) == (run.state != RunState.FINISHED)
        assert ("land" in shown) == (run.state == RunState.RUNNING and run.phase == Phase.TASK and not run.control)
        assert ("resume" in shown) == (
            run.state == RunState.FINISHED
            or (run.state == RunState.PAUSED and run.pause_reason == PauseReason.CANCELLED)
        )
        transaction.set_rollback(True)


@pytest.mark.django_db
@pytest.mark.parametrize("control", Control.values)
def test_it_reads_the_interruption_fresh(control, tmp_path):
    run = a_run({"state": RunState.RUNNING, "plan": WITHOUT}, tmp_path)
    Run.objects.filter(pk=run.pk).update(control=control)  # another process asks; `run` is stale
    assert interruption(run) == (Control(control) if control else None)
    assert interruption(run.pk) == interruption(run)
    assert cancel_asked(run) == (control == Control.CANCEL)
    said = {"cancel": "the run was cancelled", "stop": "the run was asked to stop"}.get(control)
    assert interrupted_text(run) == said
    assert interrupted_text(run, by=(Control.CANCEL,)) == (said if control == Control.CANCEL else None)
