"""on_success chains end to end (docs/chains.md): recipes in a real git repository, synced; the
first run driven through the real worker path and tools, its success starting the next after
the commit, which reads the first run's results; the checks at the on_success line; the chain's
worst case against the quotas before the first run starts."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalogue.chain_checks import link_cost
from catalogue.models import Recipe
from catalogue.recipe import parse_recipe
from runs import services
from runs.chains import chain_quota_lines, policed, run_chain
from runs.models import Control, Run, RunEvent, RunState, Step
from runs.on_success import run_chain_follow
from spend.services import quota_set
from tests.conftest import drive
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db

FIRST = """
    ---
    on_success: digest
    loop:
      do:
        max_iterations: 20
        budget:
          size: 1b
    ---
    Write the findings to findings.md.
"""

LOOPING_FIRST = """
    ---
    on_success: task:digest
    loop:
      do:
        max_iterations: 20
        budget:
          size: 1b
      while:
        max_iterations: 2
        prompts:
          until: findings.md lists three findings.
    ---
    Write three findings to findings.md.
"""

DIGEST = """
    ---
    loop:
      do:
        max_iterations: 20
        budget:
          size: 1b
    ---
    Read {{previous_results_dir}}/findings.md (run {{previous_run}}) and write digest.md.
"""


def one_pass(name: str, on_success: str | None = None) -> str:
    chain = f"    on_success: {on_success}\n" if on_success else ""
    return f"    ---\n{chain}    loop:\n      do:\n        budget:\n          size: 1b\n    ---\n    Do {name}.\n"


def saving(text: str) -> FakeModel:
    return FakeModel(
        task=[{"text": "saving", "tools": [tool("save_result", filename="findings.md", content=text)]}, "Done."]
    )


def start(name: str = "first", **options):
    return services.run_start(kind="task", name_or_path=name, args=[], provider="scripted", **options)


def finish(run, model, capture):
    """Drive the run; what its end leaves for after the commit (the chain) runs too."""
    with capture(execute=True):
        return drive(run, model)


def test_a_done_run_starts_the_next_which_reads_its_results(catalogued, django_capture_on_commit_callbacks):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    first = finish(start(), saving("three findings"), django_capture_on_commit_callbacks)
    assert first.cause == "done"
    following = Run.objects.get(chain_parent=first)
    assert (following.target, following.chain_depth, following.state) == ("task/digest", 1, RunState.QUEUED)
    assert RunEvent.objects.filter(run=first, message=f"chained: task/digest #{following.pk} started (on_success)")
    assert RunEvent.objects.filter(run=following, message=f"started by the on_success of task/first #{first.pk}")

    previous = Path(first.output_dir)
    reader = FakeModel(
        task=[
            {"text": "reading", "tools": [tool("read_result", filename=str(previous / "findings.md"))]},
            {
                "text": "overwriting",
                "tools": [tool("save_result", filename=str(previous / "findings.md"), content="x")],
            },
            {"text": "escaping", "tools": [tool("read_result", filename=str(previous / ".." / "digest.md"))]},
            {"text": "saving", "tools": [tool("save_result", filename="digest.md", content="digest")]},
            "Done.",
        ]
    )
    following = drive(following, reader)
    assert following.cause == "done"
    prompt = reader.requests[0].messages[0]["content"]
    prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
    assert f"Read {previous}/findings.md (run {first.pk}) and write digest.md." in prompt
    steps = Step.objects.filter(run_pass__run=following).order_by("number")
    read, overwrite, escape = (step.tool_results[0] for step in steps[:3])
    assert read["content"] == "three findings" and not read.get("is_error")
    assert overwrite.get("is_error") and "absolute path" in overwrite["content"]
    assert escape.get("is_error") and "not in the previous run's results folder" in escape["content"]
    assert (previous / "findings.md").read_text() == "three findings"  # the previous run's, untouched
    assert (Path(following.output_dir) / "digest.md").read_text() == "digest"
    assert [r.pk for r in run_chain(following)] == [first.pk, following.pk] == [r.pk for r in run_chain(first)]
    assert run_chain_follow(run_id=first.pk) is None  # followed once, never twice


def test_a_fulfilled_loop_chains_across_a_named_kind(catalogued, django_capture_on_commit_callbacks):
    catalogued(DIGEST, "digest")
    catalogued(LOOPING_FIRST, "first")
    first = finish(start(), saving("one two three"), django_capture_on_commit_callbacks)
    assert first.cause == "fulfilled"
    assert Run.objects.get(chain_parent=first).target == "task/digest"


def test_a_stopped_or_unfulfilled_or_cancelled_run_never_chains(catalogued, django_capture_on_commit_callbacks):
    catalogued(DIGEST, "digest")
    catalogued(LOOPING_FIRST, "first")

    def stop(request):
        Run.objects.filter(pk=run.pk).update(control=Control.STOP)

    run = start()
    stopped = finish(run, FakeModel(task=["Done."], on_call=stop), django_capture_on_commit_callbacks)
    assert stopped.cause == "stopped by user"
    run = start()
    unfulfilled = finish(run, FakeModel(task=["Done."], judge=["NO\nnone"]), django_capture_on_commit_callbacks)
    assert unfulfilled.cause.startswith("unfulfilled")
    run = start()
    Run.objects.filter(pk=run.pk).update(control=Control.CANCEL)
    cancelled = finish(run, saving("x"), django_capture_on_commit_callbacks)
    assert cancelled.state_label == "paused(cancelled)"
    assert not Run.objects.filter(target="task/digest").exists()
    assert run_chain_follow(run_id=stopped.pk) is None and run_chain_follow(run_id=cancelled.pk) is None


def test_a_link_past_the_depth_cap_is_refused_with_an_event(catalogued, django_capture_on_commit_callbacks):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    run = start()
    Run.objects.filter(pk=run.pk).update(chain_depth=8)  # as if 8 runs of a chain came before it
    first = finish(run, saving("x"), django_capture_on_commit_callbacks)
    assert first.cause == "done" and not Run.objects.filter(chain_parent=first).exists()
    assert RunEvent.objects.filter(run=first, message__contains="task/digest not started: the chain is already 8")


def test_a_link_the_catalogue_refuses_is_said_on_the_first_run(catalogued, django_capture_on_commit_callbacks):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    run = start()
    Recipe.objects.filter(name="digest").update(archived=True)  # gone from the head since it started
    first = finish(run, saving("x"), django_capture_on_commit_callbacks)
    assert first.cause == "done" and not Run.objects.filter(chain_parent=first).exists()
    assert RunEvent.objects.filter(run=first, message__contains="on_success: task/digest not started: no task recipe")


# -- check time -------------------------------------------------------------------------------------


def check(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


def check_errors(*args) -> str:
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("auto", *args, stdout=StringIO(), stderr=err)
    return err.getvalue()


def test_a_cycle_is_an_error_at_the_on_success_line_that_prints_it(catalogued):
    catalogued(one_pass("b"), "b")
    catalogued(one_pass("a", "b"), "a")
    catalogued(one_pass("b", "a"), "b")  # closes the loop a -> b -> a
    errors = check_errors("task", "check", "b")
    assert "b.md:2 on_success: the chain loops: task/b -> task/a -> task/b" in errors
    # sync kept the version that closes it out: the last good one (no on_success) still runs
    b = Recipe.objects.get(name="b")
    assert not b.latest.valid and "the chain loops: task/b -> task/a -> task/b" in b.latest.errors[0]
    assert b.good.spec["on_success"] is None
    assert "chain:   task/a -> task/b" in check("task", "check", "a")


def test_a_self_loop_and_a_missing_recipe_are_errors(catalogued):
    catalogued(one_pass("a", "a"), "a")
    assert "a.md:2 on_success: the chain loops: task/a -> task/a" in check_errors("task", "check", "a")
    catalogued(one_pass("c", "web:nowhere"), "c")
    assert "c.md:2 on_success: names web/nowhere, which is not in the catalogue" in check_errors("task", "check", "c")


def test_a_chain_of_nine_starts_is_an_error_and_eight_is_fine(catalogued):
    names = [f"n{i}" for i in range(10)]
    for name, following in reversed(list(zip(names, [*names[1:], None], strict=True))):
        catalogued(one_pass(name, following), name)
    assert "n0.md:2 on_success: the chain is 9 links deep" in check_errors("task", "check", "n0")
    out = check("task", "check", "n1")
    assert "chain:   task/n1 -> task/n2 -> " in out and out.rstrip().endswith("ok: task/n1 is valid")


def test_a_recipe_and_the_one_it_names_in_one_commit_sync_valid(recipe_file, settings):
    from catalogue.sync import recipes_sync
    from tests.recipes_git import git

    recipe_file(one_pass("a", "b"), "a")
    recipe_file(one_pass("b"), "b")
    repo = Path(settings.RYSH_RECIPES_REPO)
    git(repo, "init", "-q", "-b", settings.RYSH_RECIPES_BRANCH)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two recipes at once")
    recipes_sync()
    assert Recipe.objects.get(name="a").latest.valid


# -- the chain's worst case before the first run starts ------------------------------------------


def test_check_prints_the_chain_and_its_summed_worst_case(catalogued):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    each = link_cost("task/first").tokens + link_cost("task/digest").tokens
    out = check("task", "check", "first")
    assert "chain:   task/first -> task/digest" in out
    assert f"chain worst case: {each} tokens (" in out and "over 2 recipes" in out
    assert "chain quota: every link fits" in out
    assert "previous" not in check("task", "check", "digest")  # its placeholders are known: no warning


def test_a_quota_that_fits_the_first_but_not_the_chain_refuses_its_start(catalogued):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    first, digest = link_cost("task/first").tokens, link_cost("task/digest").tokens
    quota_set(scope="installation", window="day", tokens=first + digest // 2, dollars=None)
    with pytest.raises(services.RunRefused) as refused:
        start()
    said = str(refused.value)
    assert "task/first is not started: its on_success chain would not fit today's installation quota" in said
    assert "by task/digest (link 2 of 2)" in said
    assert not Run.objects.exists()
    dry = services.run_start(kind="task", name_or_path="first", args=[], provider="scripted", dry_run=True)
    assert any(line.startswith("chain quota: task/first is not started") for line in dry.lines)
    # the next link alone fits: it starts (what came before is spent already)
    assert isinstance(start("digest"), Run)


def test_a_quota_the_first_alone_does_not_fit_is_not_a_chain_refusal(catalogued):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    quota_set(scope="installation", window="day", tokens=link_cost("task/first").tokens // 2, dollars=None)
    assert isinstance(start(), Run)  # it may pause on the quota, as any run


# -- on the offline scripted model, as a worker runs it ----------------------------------------------


def scripted(*turns: str) -> str:
    return "passes:\n  - task:\n" + "".join(f"      - {turn}\n" for turn in turns) + '    judge: "YES\\nok"\n'


def test_both_runs_on_the_scripted_model_through_the_worker(catalogued, settings, django_capture_on_commit_callbacks):
    from runs import worker
    from runs.wiring import arm_run

    findings = Path(settings.RYSH_RESULTS_DIR) / "tasks/first/results/findings.md"
    read = f'{{text: reading, tool_calls: [{{name: read_result, input: {{filename: "{findings}"}}}}]}}'
    copy = "{text: saving, tool_calls: [{name: save_result, input: {filename: digest.md, content: copied}}]}"
    catalogued(DIGEST, "digest", script=scripted(read, copy, "{text: Done.}"))
    save = "{text: saving, tool_calls: [{name: save_result, input: {filename: findings.md, content: from a}}]}"
    catalogued(FIRST, "first", script=scripted(save, "{text: Done.}"))
    first = start()
    with django_capture_on_commit_callbacks(execute=True):
        worker.execute(first.pk, arm_run)
    first.refresh_from_db()
    following = Run.objects.get(chain_parent=first)
    assert (first.cause, following.provider) == ("done", "scripted")
    worker.execute(following.pk, arm_run)
    following.refresh_from_db()
    assert following.cause == "done"
    read_step = Step.objects.filter(run_pass__run=following).order_by("number").first()
    assert read_step.tool_results[0]["content"] == "from a"
    prompt = Step.objects.filter(run_pass__run=following).first().run_pass.messages[0]["content"]
    assert f"Read {findings.parent}/findings.md (run {first.pk})" in str(prompt)


def test_a_resumed_link_keeps_its_place_in_the_chain(catalogued, django_capture_on_commit_callbacks):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    first = finish(start(), saving("x"), django_capture_on_commit_callbacks)
    link = Run.objects.get(chain_parent=first)
    services.run_cancel(run=link)
    resumed = services.run_resume(run=Run.objects.get(pk=link.pk))
    assert (resumed.chain_parent_id, resumed.chain_depth) == (first.pk, 1)
    assert [r.pk for r in run_chain(first)] == [first.pk, resumed.pk]


def test_a_fork_does_not_chain(catalogued, django_capture_on_commit_callbacks):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    parent = drive(start("digest"), FakeModel())
    run = start()
    Run.objects.filter(pk=run.pk).update(forked_from=parent, fork_pass=1)  # as runs.forks makes one
    fork = finish(run, saving("x"), django_capture_on_commit_callbacks)
    assert fork.cause == "done" and not Run.objects.filter(chain_parent=fork).exists()


def test_the_chains_worst_case_is_the_one_its_runs_start_with_under_the_policy(catalogued, settings, tmp_path):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    written = link_cost("task/first").tokens + link_cost("task/digest").tokens
    org = tmp_path / "org-policy.yaml"
    org.write_text("budget:\n  ceilings:\n    pass: 100p\n")  # below each recipe's 1b pass budget
    settings.RYSH_ORG_POLICY = str(org)
    lowered = link_cost("task/first", shape=policed).tokens + link_cost("task/digest", shape=policed).tokens
    assert lowered < written
    # a quota the chain as written would not fit, but the chain as its runs start does
    quota_set(scope="installation", window="day", tokens=lowered, dollars=None)
    spec = Recipe.objects.get(name="first").good
    lines = chain_quota_lines(parse_recipe(spec.text, path=spec.path, kind="task"), user_id=None)
    assert f"chain worst case: {lowered} tokens" in lines[1]
    assert lines[-1] == "chain quota: every link fits what the quotas have left"
    assert isinstance(start(), Run)
