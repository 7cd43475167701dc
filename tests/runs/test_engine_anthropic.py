"""The engine on the real anthropic SDK, against the fake Messages server on loopback."""

import socket
from pathlib import Path

import pytest

from runs import services, worker
from runs.models import LedgerEntry, Run, RunEvent, Step
from runs.wiring import arm_run
from tests.fakes.anthropic_server import FakeAnthropic, fake_anthropic, judge_or  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

RECIPE = """---
loop:
  do:
    max_iterations: 10
    budget:
      size: 1b
  while:
    max_iterations: 2
    prompts:
      until: summary.md exists
---
Write summary.md.
"""


@pytest.fixture
def recipe(recipe_file):
    return recipe_file(RECIPE, "summarise", script=None)


def test_it_runs_on_claude_with_no_code_change(fake_anthropic, recipe):
    queue = judge_or(fake_anthropic)
    queue += [
        {
            "text": "Saving.",
            "tool_calls": [{"name": "save_result", "input": {"filename": "summary.md", "content": "short"}}],
        },
        {"text": "Done: summary.md saved."},
    ]
    run = services.run_start(kind="task", name_or_path=str(recipe), args=[])
    assert run.provider == "anthropic" and run.executor_model == "claude-sonnet-5-5"
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert (run.state, run.cause) == ("finished", "fulfilled")
    assert (Path(run.output_dir) / "summary.md").read_text() == "short"
    second = Step.objects.get(run_pass__run=run, number=2)
    assert second.cache_read_tokens > 0  # the stable prefix is cached between calls
    assert run.tokens_counted == sum(e.counted_tokens for e in LedgerEntry.objects.filter(run=run))
    assert run.cost is not None and run.cost > 0
    sent = fake_anthropic.requests[1].json
    assert sent["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["max_tokens"] <= 8192


def test_it_rides_out_overloaded_and_rate_limited_replies(fake_anthropic, recipe):
    judge_or(fake_anthropic)
    fake_anthropic.fail_next(status=529, times=2)
    fake_anthropic.fail_next(status=429, times=1, retry_after=0)
    run = services.run_start(kind="task", name_or_path=str(recipe), args=[])
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert run.cause == "fulfilled"


def test_it_never_shows_the_api_key(monkeypatch, recipe):
    with FakeAnthropic(api_keys=["the-right-key"]) as fake:
        for name, value in fake.environ(api_key="sk-ant-SECRET-123").items():
            monkeypatch.setenv(name, value)
        run = services.run_start(kind="task", name_or_path=str(recipe), args=[])
        worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert run.cause.startswith("error: ModelError:") and "401" in run.cause
    shown = run.cause + "".join(RunEvent.objects.filter(run=run).values_list("message", flat=True))
    shown += (Path(run.output_dir) / "run-report.md").read_text()
    assert "SECRET" not in shown


def test_it_points_at_the_scripted_model_when_there_is_no_key(monkeypatch, recipe):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(services.RunRefused, match="ANTHROPIC_API_KEY is not set.*scripted"):
        services.run_start(kind="task", name_or_path=str(recipe), args=[])
    recipe.with_name("summarise.script.yaml").write_text(
        'passes:\n  - task:\n      - text: Done.\n    judge: "YES\\nok"\n'
    )
    run = services.run_start(kind="task", name_or_path=str(recipe), args=[])
    assert (run.provider, run.executor_model) == ("scripted", "scripted-demo")


def test_it_refuses_an_unreachable_api_before_anything_is_spent(monkeypatch, recipe):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(services.RunRefused, match=f"cannot reach the Anthropic API at http://127.0.0.1:{port}"):
        services.run_start(kind="task", name_or_path=str(recipe), args=[])
    assert Run.objects.count() == 0
