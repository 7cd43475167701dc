"""test_run's reading of a test command's log: pytest, go test, unittest, any "N passed, M
failed" line, and the log's tail when nothing parses."""

from hypothesis import given
from hypothesis import strategies as st

from agents.test_summary import FIRST_FAILURES, TAIL_LINES, counts_of, summarize

PYTEST_LOG = """\
.FF                                                                      [100%]
=================================== FAILURES ===================================
___________________________________ test_bad ___________________________________

    def test_bad():
        x = 2
>       assert x == 3
E       assert 2 == 3

test_a.py:4: AssertionError
__________________________________ test_bad2 ___________________________________

>   def test_bad2(): raise ValueError("boom")
E   ValueError: boom

test_a.py:5: ValueError
=========================== short test summary info ============================
FAILED test_a.py::test_bad - assert 2 == 3
FAILED test_a.py::test_bad2 - ValueError: boom
2 failed, 1 passed in 0.58s
"""

GO_LOG = """\
=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestSub
    math_test.go:12: Sub(3, 1) = 1, want 2
--- FAIL: TestSub (0.00s)
=== RUN   TestSkip
--- SKIP: TestSkip (0.00s)
FAIL
FAIL	example.com/m	0.002s
"""

UNITTEST_LOG = """\
F.
======================================================================
FAIL: test_bad (ut.T.test_bad)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/ut.py", line 4, in test_bad
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 2 tests in 0.000s

FAILED (failures=1)
"""


def test_it_reads_pytest_s_counts_and_first_failures_with_their_e_lines():
    summary = summarize(PYTEST_LOG, 1)
    assert (summary.format, summary.status, summary.exit_status) == ("pytest", "failed", 1)
    assert (summary.passed, summary.failed, summary.errors) == (1, 2, 0)
    assert [f.id for f in summary.failures] == ["test_a.py::test_bad", "test_a.py::test_bad2"]
    assert summary.failures[0].lines == ["E       assert 2 == 3", "test_a.py:4: AssertionError"]
    assert summary.tail == []  # parsed: no log in the answer


def test_it_reads_go_test_with_what_the_failing_test_logged():
    summary = summarize(GO_LOG, 1)
    assert (summary.format, summary.passed, summary.failed, summary.skipped) == ("go", 1, 1, 1)
    assert summary.failures[0].id == "TestSub"
    assert summary.failures[0].lines == ["math_test.go:12: Sub(3, 1) = 1, want 2"]


def test_it_reads_unittest():
    summary = summarize(UNITTEST_LOG, 1)
    assert (summary.format, summary.passed, summary.failed, summary.errors) == ("unittest", 1, 1, 0)
    assert summary.failures[0].id == "ut.T.test_bad"
    assert summary.failures[0].lines[-1] == "AssertionError: 1 != 2"


def test_a_log_nothing_parses_gives_the_exit_status_and_its_tail():
    log = "\n".join(f"line {n}" for n in range(100))
    summary = summarize(log, 2)
    assert (summary.format, summary.status, summary.exit_status) == ("unparsed", "failed", 2)
    assert summary.tail == [f"line {n}" for n in range(100 - TAIL_LINES, 100)]
    assert summary.as_dict()["tail"][-1] == "line 99" and "passed" not in summary.as_dict()


def test_a_killed_command_says_so():
    assert summarize("", None, killed="timed out after 1s").status == "killed"


def test_only_the_first_failures_are_listed_and_the_rest_counted():
    log = "".join(f"FAILED t.py::test_{n} - boom\n" for n in range(9)) + "9 failed in 1.00s\n"
    summary = summarize(log, 1)
    assert len(summary.failures) == FIRST_FAILURES and summary.more_failures == 9 - FIRST_FAILURES


WORDS = {"passed": "passed", "failed": "failed", "errors": "error", "skipped": "skipped"}


@given(
    counts=st.dictionaries(st.sampled_from(sorted(WORDS)), st.integers(0, 10_000), min_size=1),
    rules=st.booleans(),
    seconds=st.floats(0, 1000, allow_nan=False).map(lambda s: f"{s:.2f}"),
    noise=st.lists(st.text(alphabet="abc xyz.:/", max_size=30), max_size=5),
)
def test_pytest_s_summary_line_is_read_back_whatever_its_counts_and_order(counts, rules, seconds, noise):
    said = ", ".join(f"{n} {WORDS[k] if n == 1 or k != 'errors' else 'errors'}" for k, n in counts.items())
    line = f"{said} in {seconds}s"
    log = "\n".join([*noise, f"===== {line} =====" if rules else line]) + "\n"
    summary = summarize(log, 0 if not counts.get("failed") and not counts.get("errors") else 1)
    assert summary.format == "pytest"
    for key in ("passed", "failed", "errors", "skipped"):
        assert getattr(summary, key) == counts.get(key, 0)


@given(
    passed=st.integers(0, 5000),
    failed=st.integers(0, 5000),
    before=st.sampled_from(["Tests: ", "test result: FAILED. ", "", "# "]),
)
def test_any_runner_s_n_passed_m_failed_line_is_read(passed, failed, before):
    log = f"running...\n{before}{passed} passed; {failed} failed; 0 ignored\n"
    summary = summarize(log, 1 if failed else 0)
    assert (summary.format, summary.passed, summary.failed) == ("counts", passed, failed)


def test_counts_of_adds_singular_and_plural():
    assert counts_of("1 error, 2 errors, 3 passed") == {"errors": 3, "passed": 3}
