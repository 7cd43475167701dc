"""Labelling the judge's verdict on the live run page, in real Chromium: a push that swaps the
passes table while someone types a note keeps the note (hx-preserve on its stable id), and the
label lands without a reload."""

from __future__ import annotations

import pytest

from tests.e2e.test_dashboard import open_run_page, wait_text

pytestmark = pytest.mark.e2e


def poke(stack, pk: int, message: str) -> None:
    """A RunEvent on the run: the web process's live hub tails it and pushes the run's sections."""
    stack.query(f"""
        from runs import events
        from runs.models import Run
        events.record(Run.objects.get(pk={pk}), "control", {message!r})
        print(json.dumps(True))
    """)


def test_an_operator_labels_a_verdict_and_a_push_keeps_the_note_being_typed(stack, as_user):
    pk = stack.run("e2e-grant")  # one pass, judged NO, then it stops at its pass cap
    page = as_user("operator")
    page_id = open_run_page(page, stack, pk)
    wait_text(page, "#run-cause", "^unfulfilled: the 1-pass cap is reached$", timeout=30_000)
    note = page.locator("#pass-1-note")
    note.wait_for()  # pushed with the verdict: no reload
    note.click()
    page.keyboard.type("half a thought")

    poke(stack, pk, "e2e push one")
    wait_text(page, "#run-events", "e2e push one")  # the push swapped every section, #run-timeline too
    assert note.input_value() == "half a thought"
    assert page.evaluate("document.activeElement && document.activeElement.id") == "pass-1-note"
    page.keyboard.type(", finished")  # the caret is where it was
    assert note.input_value() == "half a thought, finished"

    page.click("#pass-1 button[value=wrong]")
    wait_text(page, "#pass-1-label", "judge wrong")
    assert "half a thought, finished" in page.inner_text("#pass-1-label")
    wait_text(page, "#flash", f"pass 1 of run #{pk}: judge wrong")
    assert page.evaluate("window.__page_id") == page_id  # never reloaded
    label = stack.query(f"""
        from runs.models import VerdictLabel
        label = VerdictLabel.objects.get(run_pass__run_id={pk}, run_pass__number=1)
        print(json.dumps([label.judge_right, label.verdict, label.note, label.by.username]))
    """)
    assert label == [False, "NO", "half a thought, finished", "operator"]

    poke(stack, pk, "e2e push two")  # a later push shows the label too (rendered from the database)
    wait_text(page, "#run-events", "e2e push two")
    assert "judge wrong" in page.inner_text("#pass-1-label")
