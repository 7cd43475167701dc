"""output_matches is searched in a child process under a time bound; a django-q worker is a
daemonic process, which multiprocessing refuses children: grading must work there too (the demo's
suites on a qcluster graded every case with output_matches as an error before)."""

from __future__ import annotations

import multiprocessing

from evals import grading
from evals.format import Expect
from evals.grading import Evidence, grade


def _grade_in(send) -> None:
    evidence = Evidence(
        final_answer="Fixed mean() in calc.py.\nOK", results={"out.txt": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaab"}
    )
    failures = grade(Expect(output_matches=("(?i)fixed mean", "^OK$", "never", "(a+)+$")), evidence)
    send.send([f.message for f in failures])


def test_it_grades_output_matches_inside_a_daemonic_process(monkeypatch):
    monkeypatch.setattr(grading, "REGEX_SECONDS", 0.5)  # the fork carries it into the worker
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_grade_in, args=(send,), daemon=True)
    worker.start()
    assert receive.poll(30), "the daemonic worker answered nothing"
    messages = receive.recv()
    worker.join(5)
    assert messages[0] == "no match for 'never' in the final answer or the 1 result files"
    assert len(messages) == 2 and "'(a+)+$' took longer than" in messages[1]
