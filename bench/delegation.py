"""bench.engine part (e): the parent's ceiling with sub-agents (docs/benchmarks/engine.md).

`python -m bench.delegation [--jobs N] [--seed N]` (bench.engine runs it after (c) too): the random
jobs of (c) (bench.engine.random_job) with five times their budgets, whose task leg now delegates: each tool reply of the run's
agent carries 0-4 sub_agent calls (past RYSH_SUBAGENTS_PARALLEL: refused) with random asked
budgets (from 2,000 tokens to three times the task leg's allotment; at depth 2 to a third of it), and each sub-agent works a
few tool steps, may delegate again (depth 2) and answers. The model is FakeModel(adversarial=True):
every call spends the most it could.

Measured side by side on the same jobs:
- tokens counted past any leg's allotment (sub-agents' steps count in their caller's leg), the
  judge's bound, the outer total or the worst case: `delegation_overshoot_tokens` (expected 0);
  and past any sub-agent's own carved budget (expected 0);
- the bound on spend: ours (the plan's worst case, which sub-agents cannot raise) against rysh's
  independent bound (each sub-agent bounded by its own budget, not the parent's: the plan's worst
  case plus every sub-agent's asked budget), summed over the jobs.
The last line is machine-readable:
delegation_overshoot_tokens=<n> jobs=<n> sub_agents=<n> ours_bound=<n> rysh_bound=<n> spent=<n>
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from dataclasses import dataclass, field

ASKED_MIN = 2_000
SCALE = 5


@dataclass
class Delegations:
    jobs: int
    seed: int
    seconds: float = 0.0
    overshoot_tokens: int = 0  # past a leg allotment, the judge bound, the outer total or the worst case
    sub_overshoot_tokens: int = 0  # a sub-agent's spend past its carved budget
    ledger_mismatch: int = 0
    errors: int = 0
    asked: int = 0  # sub_agent calls
    started: int = 0  # sub-agents that ran
    nested: int = 0  # of which at depth 2
    refused_budget: int = 0  # refused: more than the caller had left (or too little to call)
    refused_parallel: int = 0  # refused: past RYSH_SUBAGENTS_PARALLEL in one reply
    spent: int = 0  # tokens counted, all jobs
    sub_spent: int = 0  # of which by sub-agents
    ours_bound: int = 0  # sum of the plans' worst cases
    rysh_bound: int = 0  # sum of worst case + every asked budget (rysh's independent bound)
    jobs_over_parent: int = 0  # jobs whose rysh bound passes the parent's ceiling
    causes: dict[str, int] = field(default_factory=dict)


def random_delegations(rng: random.Random, task_tokens: int) -> tuple[list[dict], list[dict]]:
    """The run agent's task turns and every sub-agent's turns (FakeModel scripts)."""
    from tests.fake_model import tool

    def asked(most: int) -> int:
        return rng.randint(ASKED_MIN, max(ASKED_MIN, most))

    def delegation(depth: int) -> dict:
        most = 3 * task_tokens if depth == 1 else task_tokens // 3  # a sub-agent has less to give
        return tool("sub_agent", task=f"Part {rng.randint(1, 99)} at depth {depth}.", budget=asked(most))

    task = []
    for _ in range(rng.randint(1, 3)):
        calls = [delegation(1) for _ in range(rng.choice((0, 1, 1, 2, 4)))]
        task.append({"text": "delegating " * 10, "tools": calls or [tool("list_results")]})
    task.append({"text": "Done."})
    sub = [{"text": "looking", "tools": [tool("list_results")]} for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.5:  # at once, or after a few steps of its own
        sub.insert(rng.randint(0, len(sub)), {"text": "again", "tools": [delegation(2)]})
    sub.append({"text": "Sub-task done: " + "x" * rng.randint(0, 400)})
    return task, sub


def bench_delegation(env, jobs: int, seed: int) -> Delegations:
    from django.db.models import Sum

    from bench.engine import random_job, run_overshoot, start_run, write_recipe
    from runs import worker
    from runs.models import LedgerEntry, RunEvent, Step
    from runs.wiring import arm_run
    from tests.fake_model import FakeModel

    rng = random.Random(seed)
    out = Delegations(jobs=jobs, seed=seed)
    started = time.perf_counter()
    for n in range(jobs):
        text, _, wrap_turns = random_job(rng)
        # (c)'s budgets times SCALE: a delegating leg has room for a sub-agent or two
        text = re.sub(r"(size|budget): (\d+)p", lambda m: f"{m[1]}: {int(m[2]) * SCALE}p", text)
        run = start_run(write_recipe(env, f"delegating-{n:04d}", text))
        task, sub = random_delegations(rng, run.plan["split"]["task"]["tokens"])
        model = FakeModel(
            task=task,
            wrap_up=[{"text": "Landed."}] if wrap_turns else None,
            judge=["NO\nnot yet"] * 5,
            adversarial=True,
            repeat_last=False,
        )
        model.turns["sub-agent"] = sub
        worker.execute(run.pk, lambda r, model=model: arm_run(r, model=model))
        run.refresh_from_db()
        cause = run.cause.split(":")[0]
        out.causes[cause] = out.causes.get(cause, 0) + 1
        out.errors += run.cause.startswith("error")
        overshoot, _, _ = run_overshoot(run)
        out.overshoot_tokens += overshoot
        ledger = LedgerEntry.objects.filter(run=run).aggregate(s=Sum("counted_tokens"))["s"] or 0
        out.ledger_mismatch += abs(run.tokens_counted - ledger)
        out.spent += run.tokens_counted
        steps = Step.objects.filter(run_pass__run=run)
        out.sub_spent += steps.exclude(agent="").aggregate(s=Sum("counted_tokens"))["s"] or 0
        asked = [c["input"]["budget"] for s in steps for c in s.tool_calls if c["name"] == "sub_agent"]
        out.asked += len(asked)
        results = [r["content"] for s in steps for r in s.tool_results]
        out.refused_budget += sum(1 for r in results if r.startswith("sub_agent asked") or "needs at least" in r)
        out.refused_parallel += sum(1 for r in results if "at most" in r and "run at once" in r)
        carved = {}
        for event in RunEvent.objects.filter(run=run, kind="sub-agent", data__ended=False):
            carved[event.data["agent"]] = event.data["budget"]
        out.started += len(carved)
        out.nested += sum(1 for agent in carved if "." in agent)
        for agent, budget in carved.items():
            own = steps.filter(agent=agent).aggregate(s=Sum("counted_tokens"))["s"] or 0
            nested = steps.filter(agent__startswith=agent + ".").aggregate(s=Sum("counted_tokens"))["s"] or 0
            out.sub_overshoot_tokens += max(0, own + nested - budget)
        worst = run.plan["worst_tokens"]
        out.ours_bound += worst
        out.rysh_bound += worst + sum(asked)
        out.jobs_over_parent += worst + sum(asked) > worst
    out.seconds = time.perf_counter() - started
    return out


def report(e: Delegations) -> list[str]:
    ratio = e.rysh_bound / e.ours_bound if e.ours_bound else 0.0
    return [
        f"(e) sub-agents under the parent's ceiling: {e.jobs} random delegating jobs (seed {e.seed}), "
        f"FakeModel(adversarial=True), {e.seconds:.0f}s",
        f"    sub_agent calls / started / nested   {e.asked} / {e.started} / {e.nested}",
        f"    refused: over the caller's room      {e.refused_budget:8d}",
        f"    refused: past the parallel limit     {e.refused_parallel:8d}",
        f"    tokens counted / by sub-agents       {e.spent:,} / {e.sub_spent:,}",
        f"    bound on spend, ours (worst cases)   {e.ours_bound:,}",
        f"    bound on spend, rysh (+ each asked)  {e.rysh_bound:,}   ({ratio:.2f}x ours; "
        f"{e.jobs_over_parent} jobs past their parent's ceiling)",
        "    causes                               "
        + ", ".join(f"{k} {v}" for k, v in sorted(e.causes.items(), key=lambda kv: -kv[1])),
        f"    errors / ledger mismatch (tokens)    {e.errors} / {e.ledger_mismatch}",
        f"    past a sub-agent's carved budget     {e.sub_overshoot_tokens:8d}",
        f"    delegation_overshoot_tokens          {e.overshoot_tokens:8d}",
    ]


def last_line(e: Delegations) -> str:
    return (
        f"delegation_overshoot_tokens={e.overshoot_tokens + e.sub_overshoot_tokens} jobs={e.jobs} "
        f"sub_agents={e.started} ours_bound={e.ours_bound} rysh_bound={e.rysh_bound} spent={e.spent}"
    )


def main(argv: list[str] | None = None) -> int:
    from bench.engine import set_up

    parser = argparse.ArgumentParser(prog="python -m bench.delegation", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--jobs", type=int, default=1000)
    args = parser.parse_args(argv)
    env = set_up()
    try:
        e = bench_delegation(env, args.jobs, args.seed)
    finally:
        env.cleanup()
    print("\n".join([*report(e), "", last_line(e)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
