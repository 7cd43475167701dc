"""The offline coding demo in real Chromium: an operator starts `fix-the-test`, watches it to
fulfilled, reads its diff on the page; an editor keeps the work as a branch, and the page then
offers neither Keep nor Discard."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.e2e.test_dashboard import accept_dialogs, run_id_from, wait_text

pytestmark = pytest.mark.e2e


def test_a_coding_run_shows_its_diff_and_an_editor_keeps_it(stack, as_user):
    page = as_user("operator")
    page.goto(f"{stack.url}/recipes/task/fix-the-test/")
    page.click("#run-recipe")
    page.click("#run-submit")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    pk = run_id_from(page.url)
    wait_text(page, "#run-cause", "^fulfilled$", timeout=60_000)
    changes = page.inner_text("#run-changes")
    assert "tiny-calc/calc.py" in changes and "+1" in changes and "−1" in changes
    named = re.search(rf"rysh/fix-the-test/[0-9a-f]{{6}}-run-{pk}\b", changes)  # this installation's key in it
    assert named, changes
    assert "No change" not in changes  # measured live, then at the pass's end
    assert "Keep" not in page.inner_text("#run-changes")  # an operator runs, an editor keeps
    steps = page.text_content("#run-steps")  # collapsed: the text is there, not shown
    assert "FAILED (failures=1)" in steps and "exit status: 0" in steps

    page.click("#run-changes >> text=Diff")
    page.wait_for_url(re.compile(rf"/runs/{pk}/changes/$"))
    assert page.inner_text("pre.diff .d-add") == "+    return sum(values) / len(values)"
    assert page.inner_text("pre.diff .d-del") == "-    return sum(values) / (len(values) - 1)"

    editor = as_user("reviewer")
    editor.goto(f"{stack.url}/runs/{pk}/")
    said = accept_dialogs(editor)
    editor.click("#run-changes >> text=Keep")
    wait_text(editor, "#run-changes", "Kept as")
    assert said and said[0].startswith(f"Keep run #{pk}'s work?")
    branch = named.group(0)
    kept = editor.inner_text("#run-changes")
    assert f"on {branch}" in kept and "Discard" not in kept and "Keep as" not in kept  # kept: nothing to press
    shown = subprocess.run(
        ["git", "-C", str(stack.repo), "show", f"{branch}:tiny-calc/calc.py"], capture_output=True, text=True
    )
    assert "return sum(values) / len(values)" in shown.stdout
    assert (
        subprocess.run(["git", "-C", str(stack.repo), "status", "--porcelain"], capture_output=True, text=True).stdout
        == ""
    )
