"""/metrics' eval figures (docs/evals.md, docs/metrics.md): cases by outcome, the last ended
suite's pass rate per recipe and side, suites' spend; labels bounded to recipe targets (a
folder run with `auto eval PATH` is "path"), and as many queries for one suite as for forty."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evals.models import CaseResult, CaseState, Suite, SuiteState
from ops import metrics as figures
from tests.ops.test_metrics import samples, value

pytestmark = pytest.mark.django_db


def suite(target="task/notes", side="main", *, state=SuiteState.DONE, tokens=0, cost=None, cases=()) -> Suite:
    made = Suite.objects.create(
        target=target, side=side, state=state, tokens_counted=tokens, cost=None if cost is None else Decimal(cost)
    )
    for number, case_state in enumerate(cases):
        CaseResult.objects.create(suite=made, name=f"c{number}", folder=f"x/c{number}", state=case_state)
    return made


P, F, E, B, R = CaseState.PASSED, CaseState.FAILED, CaseState.ERROR, CaseState.BROKEN, CaseState.PENDING


def test_the_eval_figures():
    suite(cases=(P, F, F, E), tokens=1000, cost="0.40")  # an older main suite of task/notes
    suite(cases=(P, P, P, F), tokens=900, cost="0.35")  # its last: 3 of 4
    suite(side="change", cases=(P, P, B), tokens=500, cost="0.20")
    suite(side="change", state=SuiteState.RUNNING, cases=(P, R), tokens=100)  # still running: not the last ended
    suite("code/fix", cases=(P, P), state=SuiteState.CEILING, tokens=300)
    suite("/home/me/pkg-a/evals", side="path", cases=(F,), tokens=50)
    suite("/home/me/pkg-b/evals", side="path", cases=(P,), tokens=60)

    found = samples(figures.exposition()[0].decode())

    main = {"recipe": "task/notes", "side": "main"}
    assert value(found, "rysh_eval_cases_total", **main, outcome="passed") == 4
    assert value(found, "rysh_eval_cases_total", **main, outcome="failed") == 3
    assert value(found, "rysh_eval_cases_total", **main, outcome="error") == 1
    assert value(found, "rysh_eval_cases_total", recipe="task/notes", side="change", outcome="broken") == 1
    assert value(found, "rysh_eval_cases_total", recipe="task/notes", side="change", outcome="passed") == 3
    assert value(found, "rysh_eval_pass_rate", **main) == pytest.approx(0.75)
    assert value(found, "rysh_eval_pass_rate", recipe="task/notes", side="change") == pytest.approx(2 / 3)
    assert value(found, "rysh_eval_pass_rate", recipe="code/fix", side="main") == 1
    assert value(found, "rysh_eval_suites_total", **main, state="done") == 2
    assert value(found, "rysh_eval_suites_total", recipe="task/notes", side="change", state="running") == 1
    assert value(found, "rysh_eval_suites_total", recipe="code/fix", side="main", state="ceiling") == 1
    assert value(found, "rysh_eval_tokens_counted_total", **main) == 1900
    assert value(found, "rysh_eval_tokens_counted_total", recipe="task/notes", side="change") == 600
    assert value(found, "rysh_eval_cost_dollars_total", **main) == pytest.approx(0.75)
    # folders given to `auto eval PATH` are one label value, never the folder
    assert value(found, "rysh_eval_suites_total", recipe="path", side="path", state="done") == 2
    assert value(found, "rysh_eval_tokens_counted_total", recipe="path", side="path") == 110
    recipes = {dict(labels).get("recipe") for (name, labels) in found if name.startswith("rysh_eval_")}
    assert recipes == {"task/notes", "code/fix", "path"}
    assert not [key for key in found if key[0] == "rysh_eval_pass_rate" and dict(key[1])["side"] == "path"]


def test_as_many_queries_for_one_suite_as_for_forty():
    def queries() -> int:
        with CaptureQueriesContext(connection) as asked:
            figures.eval_cases_by_outcome()
            figures.eval_pass_rate()
            list(figures.eval_spend())
        return len(asked)

    suite(cases=(P,))
    few = queries()
    for i in range(40):
        suite(f"task/notes-{i % 5}", side=("main", "change", "path")[i % 3], cases=(P, F))
    assert queries() == few == 3
