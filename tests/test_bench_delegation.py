"""bench.engine part (e), small: random delegating jobs on the adversarial fake model spend not
one token past any parent's leg, any sub-agent's carved budget or any job's totals, and the
report sets our bound beside rysh's independent one."""

import random
from types import SimpleNamespace

import pytest

from bench.delegation import bench_delegation, last_line, random_delegations, report

pytestmark = pytest.mark.django_db


def test_random_delegations_ask_budgets_up_to_three_times_the_leg_and_nest():
    rng = random.Random(7)
    scripts = [random_delegations(rng, 10_000) for _ in range(50)]
    asked = [
        c["input"]["budget"]
        for task, _ in scripts
        for turn in task
        for c in turn.get("tools", [])
        if c["name"] == "sub_agent"
    ]
    assert asked and min(asked) >= 2_000 and max(asked) <= 30_000 and max(asked) > 10_000
    assert any(len(turn.get("tools", [])) == 4 for task, _ in scripts for turn in task)  # past the limit
    assert any(c["name"] == "sub_agent" for _, sub in scripts for turn in sub for c in turn.get("tools", []))


def test_a_few_delegating_jobs_never_pass_the_parent_s_ceiling(tmp_path, results_root):
    env = SimpleNamespace(recipes=tmp_path / "repo/.rysh/automations/tasks")
    env.recipes.mkdir(parents=True)
    e = bench_delegation(env, jobs=12, seed=11)
    assert e.errors == 0 and e.ledger_mismatch == 0
    assert e.overshoot_tokens == 0 and e.sub_overshoot_tokens == 0
    assert e.started > 0 and e.sub_spent > 0 and e.refused_budget > 0
    assert e.rysh_bound > e.ours_bound
    lines = report(e)
    assert lines[-1].split() == ["delegation_overshoot_tokens", "0"]
    assert last_line(e).startswith("delegation_overshoot_tokens=0 jobs=12 ")
