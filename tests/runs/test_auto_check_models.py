"""`auto <kind> check` with an API key asks the Models API (real SDK, fake server) whether the
recipe's models are ones the key can use; without a key it asks nothing."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

RECIPE = """---
model: claude-sonnet-4-6
loop:
  do:
    model: "claude-x-9"
    max_iterations: 3
  while:
    max_iterations: 2
    judge_model: claude-haiku-4-5
    prompts:
      until: summary.md exists
---
Write summary.md.
"""


@pytest.fixture
def recipe(tmp_path):
    path = tmp_path / "summarise.md"
    path.write_text(RECIPE)
    return path


def check(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("auto", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_names_the_line_of_a_model_the_key_cannot_use(fake_anthropic, recipe):
    err = StringIO()
    with pytest.raises(CommandError, match="1 error"):
        call_command("auto", "task", "check", str(recipe), stdout=StringIO(), stderr=err)
    assert err.getvalue().startswith(
        "summarise.md:5 loop.do.model: claude-x-9 is not a model this API key can use (models it can: claude-opus-4-7, "
    )
    assert "judge" not in err.getvalue()  # the alias claude-haiku-4-5 is one the key can use


def test_the_models_in_force_pass(fake_anthropic, recipe):
    recipe.write_text(RECIPE.replace('"claude-x-9"', "claude-opus-4-7"))
    out, _ = check("task", "check", str(recipe))
    assert out.rstrip().endswith("ok: task/summarise is valid")
    assert "models not checked" not in out


def test_a_models_api_that_fails_is_a_warning(fake_anthropic, recipe):
    fake_anthropic.fail_next_models(500)
    out, _ = check("task", "check", str(recipe))
    assert "models not checked: the Models API answered 500: Internal server error" in out
    assert out.rstrip().endswith("ok: task/summarise is valid")


def test_without_a_key_nothing_is_asked(recipe, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out, _ = check("task", "check", str(recipe))
    assert out.rstrip().endswith("ok: task/summarise is valid") and "models" not in out
