"""The run header's budget bar (docs/dashboard.md): the pass cap is what the pass may really
spend — min(its own allotment, what the job has left) — never a cap above the job's; budgets
read in rysh's units; no takeover where the recipe has no wrap-up prompt."""

import pytest
from django.template.loader import render_to_string
from hypothesis import given
from hypothesis import strategies as st

from budgets.plan import resolve
from budgets.units import PAGE
from catalogue.recipe import parse_recipe
from runs.arming import plan_snapshot
from runs.models import Run
from runs.results.report import plan_lines_from_snapshot
from runs.selectors import live_row, pass_caps

# 120p over 2 passes: 60p a pass, split 54p + 6p, the 6p wrap-up floored to 1b (200p): a pass's
# own worst case (254p) is more than the whole job's (120p)
THIN = """---
loop:
  do:
    budget:
      size: 100p
      watch:
        takeover_prompt: Save what you have.
  while:
    max_iterations: 2
    budget: 120p
    prompts:
      until: the report exists
---
Write the report.
"""


def plan_of(text: str) -> dict:
    spec = parse_recipe(text, path=".rysh/automations/tasks/thin.md")
    return plan_snapshot(resolve(spec.do, spec.loop_while))


def test_the_pass_cap_is_never_above_what_the_job_has_left():
    plan = plan_of(THIN)
    assert plan["worst_tokens"] == 120 * PAGE and plan["split"]["takeover"]["tokens"] == 200 * PAGE
    assert pass_caps(plan) == (54 * PAGE, 66 * PAGE)  # 120p in all, the wrap-up taking over at 54p
    assert pass_caps(plan, job_left=20 * PAGE) == (14 * PAGE, 6 * PAGE)  # late in the job
    assert pass_caps(plan, job_left=0) == (0, 0)


@pytest.mark.django_db
def test_the_header_shows_the_pass_within_the_job_in_rysh_units():
    plan = plan_of(THIN)
    run = Run.objects.create(kind="task", name="thin", target="task/thin", plan=plan, provider="scripted")
    row = live_row(run, current=None, settled=100 * PAGE + 500)
    html = render_to_string("runs/shared/_budget_bar.html", {"row": row})
    assert "pass 0p/19.5p · job ~101p/120p, wrap-up at 13.5p/pass" in " ".join(html.split())
    assert "this pass: 0 of 19500 tokens" in html  # the exact count, on hover
    fresh = live_row(run, current=None, settled=0)
    assert fresh.pass_bar["cap_text"] == "120p" and fresh.budget_text == "0p/120p, wrap-up at 54p/pass"


@given(
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**8) | st.none(),
)
def test_no_pass_cap_exceeds_its_share_or_the_job(task, raw, floored, outer, left):
    plan = {
        "split": {"task": {"tokens": task}, "raw_takeover": {"tokens": raw}, "takeover": {"tokens": max(raw, floored)}},
        "outer_tokens": outer,
    }
    got_task, got_wrap = pass_caps(plan, left)
    assert 0 <= got_task <= task and 0 <= got_wrap <= max(raw, floored)
    bound = left if left is not None else (outer or None)
    assert bound is None or got_task + got_wrap <= bound


SOFTDEV_LIKE = "---\nloop:\n  while:\n    max_iterations: 5\n    prompts:\n      until: green\n---\nGo.\n"
SEED_LIKE = THIN


def test_plan_lines_have_no_takeover_without_a_wrap_up_prompt():
    assert plan_lines_from_snapshot(plan_of(SOFTDEV_LIKE))[1] == "perPass: tokens=600000  duration=20m0s"
    assert plan_lines_from_snapshot(plan_of(SEED_LIKE))[1] == "perPass: tokens=60000  duration=20m0s  takeover=90"
