"""`auto <kind> rejudge NAME --until-file F -n N`: the re-judge from the CLI, end to end."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from runs.models import LedgerEntry, Rejudge
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.recipes_git import work  # noqa: F401 (fixture)
from tests.runs.rejudge_fixtures import judged_run, label, scripted_verdicts

pytestmark = pytest.mark.django_db


@pytest.fixture
def goal(tmp_path):
    path = tmp_path / "goal.txt"
    path.write_text("The report cites three sources.\n")
    return path


def auto(*words):
    out = StringIO()
    call_command("auto", *words, stdout=out)
    return out.getvalue()


def test_it_prints_the_estimate_runs_and_prints_the_delta(fake_anthropic, work, tmp_path, goal):
    run = judged_run(tmp_path / "a", [("YES", "R1 one source"), ("NO", "R2 three sources")])
    label(run, 1, judge_right=True, note="looked fine")
    scripted_verdicts(fake_anthropic, {"R1": "NO\nonly one source", "R2": "YES\nthree cited"})
    out = auto("task", "rejudge", "report", "--until-file", str(goal), "-n", "10")
    lines = out.splitlines()
    assert lines[0].startswith(
        "estimate: re-judge 2 pass(es) of task/report with claude-haiku-5-5 (anthropic): at most"
    )
    assert "only 2 of the 10 asked for" in lines[0]
    assert lines[2].split() == [*f"run #{run.pk} pass 2".split(), "NO", "YES", "FLIP", "—", "three", "cited"]
    assert lines[3].split()[:7] == [*f"run #{run.pk} pass 1".split(), "YES", "NO", "FLIP"]
    assert "judge right (YES), disagrees" in lines[3]
    assert "2 of 2 verdicts flip; with people: the new judge agrees on 0, disagrees on 1 (of 1 labelled passes)" in out
    rejudge = Rejudge.objects.get()
    assert rejudge.change_request is None and rejudge.until == "The report cites three sources."
    assert f"re-judge #{rejudge.pk} done: {rejudge.tokens_counted:,} of {rejudge.budget_tokens:,} tokens, $" in out
    assert LedgerEntry.objects.filter(rejudge=rejudge, run=None).count() == 2


def test_without_an_until_file_it_reuses_the_current_goal(fake_anthropic, work, tmp_path):
    judged_run(tmp_path / "a", [("NO", "R1")])
    auto("task", "rejudge", "report", "-n", "1", "--judge-model", "claude-sonnet-4-6")
    rejudge = Rejudge.objects.get()
    assert (rejudge.until, rejudge.judge_model) == ("The report exists.", "claude-sonnet-4-6")


def test_it_says_clearly_what_is_wrong(fake_anthropic, work, tmp_path, goal):
    with pytest.raises(CommandError, match="nosuch"):
        auto("task", "rejudge", "nosuch", "--until-file", str(goal))
    with pytest.raises(CommandError, match="cannot read --until-file"):
        auto("task", "rejudge", "report", "--until-file", str(tmp_path / "missing.txt"))
    with pytest.raises(CommandError, match="no judged pass with a saved result"):
        auto("task", "rejudge", "report", "--until-file", str(goal))
    assert not Rejudge.objects.exists()


def test_offline_it_uses_the_scripted_judge_and_labels_it(work, tmp_path, goal, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    run = judged_run(tmp_path / "a", [("NO", "R1")])
    script = tmp_path / "report.script.yaml"
    script.write_text('passes:\n  - judge: "YES\\nscripted"\n')
    run.script_path = str(script)
    run.save()
    out = auto("task", "rejudge", "report", "--until-file", str(goal))
    assert "(offline scripted judge)" in out and "free (offline)" in out and "note: offline scripted judge" in out
    assert "1 of 1 verdicts flip" in out
