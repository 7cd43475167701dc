"""Raise the cap and continue (docs/spend.md): a run that ended at an outer ceiling is granted more and
goes on as the same run; grants are bounded and refused where they cannot help."""

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from budgets.plan import Grant as PlanGrant
from runs import services
from runs.models import Grant, Pass, Run, RunEvent, RunState
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.runs.test_view_runs import client_for, user_with

pytestmark = pytest.mark.django_db

LOOP = """
    ---
    loop:
      do:
        max_iterations: 30
        budget:
          size: 30p
      while:
        max_iterations: 2
        budget: 90p
        max_duration: 1h
        prompts:
          until: The list has five entries.
    ---
    Compile a list.
"""
SAVE = tool("save_result", filename="list.md", content="entry " * 20)


def ended_at_the_pass_cap(start) -> Run:
    run = start(LOOP)
    run = drive(
        run, FakeModel(task=[{"text": "s", "tools": [SAVE]}, {"text": "Done."}], judge=["NO\nthree", "NO\nfour"])
    )
    assert run.cause == "unfulfilled: the 2-pass cap is reached"
    return run


def test_a_run_at_its_pass_cap_is_granted_a_pass_and_goes_on_as_the_same_run(start):
    run = ended_at_the_pass_cap(start)
    message = services.run_grant(run=run, extra=PlanGrant(passes=1))
    assert message == (
        f"run #{run.pk} granted +1 pass; it goes on as the same run (was: unfulfilled: the 2-pass cap is reached)"
    )
    run.refresh_from_db()
    assert run.state == RunState.QUEUED and run.cause == "" and run.plan["passes"] == 3
    assert run.plan["outer_tokens"] == 90_000  # only what was granted changes
    run = drive(
        run,
        FakeModel(
            task=[{"text": "s", "tools": [SAVE]}, {"text": "Done."}], judge=["NO\nthree", "NO\nfour", "YES\nfive"]
        ),
    )
    assert run.cause == "fulfilled" and Run.objects.count() == 1
    passes = list(Pass.objects.filter(run=run).order_by("number"))
    assert [p.verdict for p in passes] == ["NO", "NO", "YES"]
    seed = passes[2].messages[0]["content"][0]["text"]
    assert "This is pass 3 of a loop." in seed and "four" in seed  # seeded as usual
    grant = Grant.objects.get(run=run)
    assert (grant.passes, grant.cause_before) == (1, "unfulfilled: the 2-pass cap is reached")
    granted = RunEvent.objects.get(run=run, kind="granted").message
    assert "granted +1 pass by the CLI after 'unfulfilled: the 2-pass cap is reached'; now 3 passes" in granted
    report = (Path(run.output_dir) / "run-report.md").read_text()
    assert "+1 pass" in report and "maxIter=3" in report


@pytest.mark.parametrize(
    ("extra", "refusal"),
    [
        (PlanGrant(tokens=50_000), "the run used all its passes: grant passes (--passes)"),
        (PlanGrant(), "a grant needs extra passes, an extra outer total or extra outer time"),
        (PlanGrant(passes=3), "grants may add at most 2 passes to this recipe's runs"),
        (PlanGrant(passes=1, tokens=100_000), "grants may add at most 90p outer total"),
    ],
)
def test_a_grant_that_cannot_help_or_passes_the_maximum_is_refused(start, extra, refusal):
    run = ended_at_the_pass_cap(start)
    with pytest.raises(services.RunRefused, match=re.escape(refusal)):
        services.run_grant(run=run, extra=extra)
    run.refresh_from_db()
    assert run.state == RunState.FINISHED and not Grant.objects.exists()


def test_the_refusal_names_the_setting_that_sets_the_maximum(start, settings):
    settings.RYSH_GRANT_MAX_PERCENT = 50
    run = ended_at_the_pass_cap(start)
    with pytest.raises(services.RunRefused) as refused:
        services.run_grant(run=run, extra=PlanGrant(passes=2))
    assert str(refused.value) == (
        f"run #{run.pk}: grants may add at most 1 passes to this recipe's runs "
        "(RYSH_GRANT_MAX_PERCENT=50: 50% of the recipe's own); this one would add 2 in all"
    )
    assert hasattr(settings, "RYSH_GRANT_MAX_PERCENT") and not hasattr(settings, "RYSH_GRANT_MAX_FACTOR")


@pytest.mark.parametrize(
    "extra",
    [
        PlanGrant(passes=-1),
        PlanGrant(tokens=-10_000),
        PlanGrant(seconds=-60),
        PlanGrant(passes=2, tokens=-10_000),  # a negative hidden beside a positive
        PlanGrant(passes=-1, tokens=10_000, seconds=60),
    ],
)
def test_a_negative_grant_is_refused_and_changes_nothing(start, extra):
    run = ended_at_the_pass_cap(start)
    plan_before = dict(run.plan)
    with pytest.raises(services.RunRefused, match="a grant only adds: passes, tokens and time must not be negative"):
        services.run_grant(run=run, extra=extra)
    run.refresh_from_db()
    assert run.state == RunState.FINISHED and run.plan == plan_before
    assert not Grant.objects.exists() and not RunEvent.objects.filter(run=run, kind="granted").exists()


@pytest.mark.parametrize(
    "options, said",
    [
        (["--passes", "-1"], "a grant only adds: passes, tokens and time must not be negative"),
        (["--passes=-3", "--time", "10m"], "a grant only adds: passes, tokens and time must not be negative"),
        (["--total=-10p"], "grant: expected a budget size"),
        (["--time=-5m"], "grant: expected a duration"),
    ],
)
def test_the_cli_refuses_a_negative_grant(start, options, said):
    run = ended_at_the_pass_cap(start)
    with pytest.raises(CommandError, match=re.escape(said)):
        call_command("auto", "task", "grant", f"#{run.pk}", *options, stdout=StringIO())
    run.refresh_from_db()
    assert run.state == RunState.FINISHED and run.plan["passes"] == 2 and not Grant.objects.exists()


def test_the_run_page_refuses_a_negative_grant(start):
    run = ended_at_the_pass_cap(start)
    operator = client_for(user_with("operator"))
    refused = operator.post(f"/runs/{run.pk}/grant/", {"passes": "-1"}, follow=True).content.decode()
    assert "grant refused: passes:" in refused
    run.refresh_from_db()
    assert run.state == RunState.FINISHED and not Grant.objects.exists()


def test_grants_add_up_against_the_maximum(start, settings):
    settings.RYSH_GRANT_MAX_PERCENT = 50  # one more pass of the recipe's two
    run = ended_at_the_pass_cap(start)
    services.run_grant(run=run, extra=PlanGrant(passes=1))
    run = drive(run, FakeModel(task=[{"text": "Done."}], judge=["NO\na", "NO\nb", "NO\nc"]))
    assert run.cause == "unfulfilled: the 3-pass cap is reached"
    with pytest.raises(services.RunRefused, match="at most 1 passes"):
        services.run_grant(run=run, extra=PlanGrant(passes=1))


def test_only_a_run_that_ended_at_an_outer_ceiling_can_be_granted(start):
    run = drive(start(LOOP), FakeModel(task=[{"text": "Done."}], judge=["YES\nfive"]))
    with pytest.raises(services.RunRefused, match="this one ended: fulfilled"):
        services.run_grant(run=run, extra=PlanGrant(passes=1))
    queued = start(LOOP, name="other")
    with pytest.raises(services.RunRefused, match="has not ended"):
        services.run_grant(run=queued, extra=PlanGrant(passes=1))


def test_a_budget_exhausted_run_is_granted_tokens_and_the_new_ceiling_holds(start):
    burn = tool("list_results")
    wrap_up = (
        "size: 30p\n          watch:\n            takeover_when: 90\n            takeover_prompt: Save what exists."
    )
    run = start(LOOP.replace("max_iterations: 2\n", "max_iterations: 4\n").replace("size: 30p", wrap_up))
    model = FakeModel(
        task=[{"text": "go", "tools": [burn]}],
        wrap_up=[{"text": "w", "tools": [burn]}],
        judge=["NO\nmore"] * 8,
        adversarial=True,
    )
    run = drive(run, model)
    assert run.cause == "budget exhausted" and run.tokens_counted <= 90_000
    services.run_grant(run=run, extra=PlanGrant(tokens=60_000))
    run = drive(run, model)
    assert run.tokens_counted <= 150_000 and run.plan["outer_tokens"] == 150_000
    assert run.cause in ("budget exhausted", "unfulfilled: the 4-pass cap is reached")
    assert RunEvent.objects.filter(run=run, kind="finished").count() == 2  # the first end stays in its history


def test_the_cli_grants_passes_tokens_and_time(start):
    run = ended_at_the_pass_cap(start)
    out = StringIO()
    call_command("auto", "task", "grant", run.name, "--passes", "1", "--total", "10p", "--time", "30m", stdout=out)
    assert "granted +1 pass, +10p outer total, +30m outer time" in out.getvalue()
    run.refresh_from_db()
    assert (run.plan["passes"], run.plan["outer_tokens"], run.plan["outer_seconds"]) == (3, 100_000, 5400)
    with pytest.raises(CommandError, match="has not ended"):
        call_command("auto", "task", "grant", f"#{run.pk}", "--passes", "1")
    with pytest.raises(CommandError, match="grant: "):
        call_command("auto", "task", "grant", f"#{run.pk}", "--time", "soon")


def test_an_operator_grants_from_the_run_page_and_a_viewer_cannot(start):
    run = ended_at_the_pass_cap(start)
    viewer = client_for(user_with("viewer"))
    page = viewer.get(f"/runs/{run.pk}/").content.decode()
    assert "Grant and continue" not in page
    assert viewer.post(f"/runs/{run.pk}/grant/", {"passes": "1"}).status_code == 403
    operator = client_for(user_with("operator"))
    page = operator.get(f"/runs/{run.pk}/").content.decode()
    assert f'action="/runs/{run.pk}/grant/"' in page and "Grant and continue" in page
    bad = operator.post(f"/runs/{run.pk}/grant/", {"total": "lots"}, follow=True).content.decode()
    assert "grant refused: total:" in bad
    refused = operator.post(f"/runs/{run.pk}/grant/", {"passes": "5"}, follow=True).content.decode()
    assert "grants may add at most 2 passes" in refused
    response = operator.post(f"/runs/{run.pk}/grant/", {"passes": "1", "total": "", "time": "10m"})
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    run.refresh_from_db()
    assert run.state == RunState.QUEUED and run.plan["passes"] == 3 and run.plan["outer_seconds"] == 4200
    assert Grant.objects.get(run=run).granted_by.username == "operator-user"
