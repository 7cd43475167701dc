"""A run on Claude and the Models API (real SDK, fake server): a model the key cannot use is
refused before anything is spent, and max_tokens is never asked above the model's maximum."""

import pytest

from runs import services, worker
from runs.models import Run
from runs.wiring import arm_run
from tests.fakes.anthropic_server import fake_anthropic, model_info  # noqa: F401 (fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

RECIPE = """---
loop:
  do:
    model: {model}
    max_iterations: 10
    budget:
      size: 1b
  while:
    max_iterations: 1
    prompts:
      until: summary.md exists
---
Write summary.md.
"""


@pytest.fixture
def recipe(recipe_file):
    return lambda model: recipe_file(RECIPE.format(model=model), "summarise", script=None)


def test_it_refuses_a_model_the_key_cannot_use_before_anything_is_spent(fake_anthropic, recipe):
    with pytest.raises(services.RunRefused) as refused:
        services.run_start(kind="task", name_or_path=str(recipe("claude-x-9")), args=[])
    assert str(refused.value).startswith(
        "claude-x-9 is not a model this API key can use (models it can: claude-opus-4-7, claude-sonnet-4-6, "
    )
    assert not Run.objects.exists() and fake_anthropic.calls == 0


def test_an_alias_the_key_can_use_runs(fake_anthropic, recipe):
    run = services.run_start(kind="task", name_or_path=str(recipe("claude-sonnet-4-5")), args=[])
    assert run.executor_model == "claude-sonnet-4-5"


def test_a_models_api_that_fails_refuses_nothing(fake_anthropic, recipe):
    fake_anthropic.fail_next_models(503)
    assert services.run_start(kind="task", name_or_path=str(recipe("claude-x-9")), args=[]).pk


def test_max_tokens_is_capped_at_the_models_maximum_output(fake_anthropic, recipe):
    fake_anthropic.models.insert(0, model_info("claude-small-1", max_tokens=2000))
    fake_anthropic.responder = lambda body: {"text": "YES\nok" if "independent judge" in str(body) else "Done."}
    run = services.run_start(kind="task", name_or_path=str(recipe("claude-small-1")), args=[])
    worker.execute(run.pk, arm_run)
    sent = [r.json for r in fake_anthropic.requests if r.json["model"] == "claude-small-1"]
    assert sent and all(body["max_tokens"] == 2000 for body in sent)
