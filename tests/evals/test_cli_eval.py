"""`auto eval RECIPE|PATH [--case C] [--result] [--json]` from the command line with the embedded
defaults (no cluster: the suite is driven in process), against the fake Messages server; rysh's
exit codes 0 all passed, 1 a case failed, 2 refused or broken input."""

import json
import textwrap
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from evals.models import Suite
from tests.evals.suites_setup import FIX, bash, commit, edit, messages_requests, recipes, script  # noqa: F401
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.workspaces.conftest import CALC, TEST

pytestmark = pytest.mark.django_db(transaction=True)


def auto_eval(*args) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("auto", "eval", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exit:
        code = exit.code
    return code, out.getvalue(), err.getvalue()


def test_it_prints_the_plan_then_each_case_and_exits_1_when_a_case_failed(fake_anthropic, recipes):
    script(fake_anthropic)
    code, out, _ = auto_eval("task/fix")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("suite of task/fix (main at ") and any(line.startswith("ceiling: ") for line in lines)
    suite = Suite.objects.get()
    assert out.index("ceiling: ") < out.index(f"suite #{suite.pk} of task/fix (main): done")
    assert any(line.startswith("  PASSED  good: ") and " tokens, " in line for line in lines)
    assert any(line.startswith("  FAILED  bad: ") for line in lines)
    assert "    files_changed: " in out and "test_calc.py" in out
    assert "1/2 passed; " in out


def test_one_case_that_passes_exits_0_and_json_is_one_document(fake_anthropic, recipes):
    script(fake_anthropic)
    code, out, _ = auto_eval("task/fix", "--case", "good", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["exit"] == 0 and document["state"] == "done"
    assert [c["name"] for c in document["cases"]] == ["good"]
    assert document["cases"][0]["state"] == "passed" and document["cases"][0]["rubric"]["verdict"] == "YES"
    assert document["tokens_counted"] <= document["budget_tokens"]
    assert document["plan"][-1].startswith("ceiling: ")


def test_result_grades_the_last_suite_again_against_the_current_expect_with_no_model_call(fake_anthropic, recipes):
    script(fake_anthropic)
    assert auto_eval("task/fix", "--case", "good")[0] == 0
    # tighten expect.yaml (no judge.md any more): the recorded run no longer passes
    case = recipes / ".rysh/automations/tasks/fix/evals/good"
    (case / "expect.yaml").write_text('files_changed: ["calc.py"]\noutput_matches: ["NEVER SAID"]\n')
    (case / "judge.md").unlink()
    commit(recipes, "tighter")
    before = len(fake_anthropic.requests)
    code, out, _ = auto_eval("task/fix", "--result")
    assert code == 1
    assert len(fake_anthropic.requests) == before  # the assertions cost nothing: no request at all
    assert "output_matches: " in out and "NEVER SAID" in out
    assert Suite.objects.count() == 1  # graded in place; graded_at moved


def test_a_rubric_regrade_makes_only_judge_calls(fake_anthropic, recipes):
    script(fake_anthropic)
    assert auto_eval("task/fix", "--case", "good")[0] == 0
    before = len(messages_requests(fake_anthropic))
    (recipes / ".rysh/automations/tasks/fix/evals/good/judge.md").write_text("The answer mentions calc.py.\n")
    commit(recipes, "another rubric")
    script(fake_anthropic, verdict="NO\nthe answer never says so")
    code, out, _ = auto_eval("task/fix", "--result")
    assert code == 1 and "rubric: the judge said NO: the answer never says so" in out
    new = messages_requests(fake_anthropic)[before:]
    assert len(new) == 1 and "grading an unattended agent's run of an eval case" in str(new[0].json["system"])
    assert "The answer mentions calc.py." in json.dumps(new[0].json["messages"])
    suite = Suite.objects.get()
    assert suite.tokens_counted <= suite.budget_tokens


def rysh_package(root, *, expect="files_changed: [calc.py]\n"):
    """A package in rysh's own layout: evals/<case>/ with no recipe of ours."""
    case = root / "pkg/evals/mean"
    (case / "files").mkdir(parents=True)
    (case / "files/calc.py").write_text(CALC)
    (case / "files/test_calc.py").write_text(TEST)
    (case / "task.md").write_text("[case pkg] Fix mean() in calc.py so the test passes.\n")
    (case / "expect.yaml").write_text(textwrap.dedent(expect))
    return root / "pkg"


PKG_TURNS = {
    "pkg": [bash("python3 -m unittest -q"), edit(**FIX), {"text": "Fixed mean() in calc.py."}],
}


def test_a_folder_in_rysh_layout_runs_on_the_built_in_agent(fake_anthropic, recipes, tmp_path):
    script(fake_anthropic, turns={"pkg": PKG_TURNS["pkg"]})
    package = rysh_package(tmp_path)
    code, out, _ = auto_eval(str(package))
    assert code == 0, out
    assert "PASSED  mean: " in out
    assert Suite.objects.get().cases.get().run.workspace.stat[0]["path"] == "calc.py"
    first = messages_requests(fake_anthropic)[0].json
    assert "## The task" in json.dumps(first) and "[case pkg]" in json.dumps(first)
    # tightened, the same folder fails: exit 1, and --result grades it again for free
    (package / "evals/mean/expect.yaml").write_text('files_changed: ["docs/**"]\n')
    before = len(fake_anthropic.requests)
    code, out, _ = auto_eval(str(package), "--result")
    assert code == 1 and "calc.py" in out and len(fake_anthropic.requests) == before


def test_a_broken_folder_exits_2(recipes, tmp_path):
    broken = tmp_path / "broken/evals/only-task"
    broken.mkdir(parents=True)
    (broken / "task.md").write_text("no expect.yaml\n")
    code, _, err = auto_eval(str(tmp_path / "broken"))
    assert code == 2 and "nothing to run" in err and "expect.yaml" in err
    code, _, err = auto_eval(str(tmp_path))  # no cases there at all
    assert code == 2 and "refused: " in err
    code, _, err = auto_eval("task/nope")
    assert code == 2 and "no recipe task/nope" in err


def test_an_unknown_action_is_still_refused_for_the_recipe_kinds():
    with pytest.raises(CommandError, match="invalid choice: 'fly'"):
        call_command("auto", "task", "fly", "x", stdout=StringIO())
