"""Forks in real Chromium (docs/forks.md): an operator redoes pass 1 of the offline coding demo
with an edited prompt from the run page; the fork's page says where it came from, the compare
page shows both runs, and an editor's "Propose this edit" opens a change of the prompt alone."""

from __future__ import annotations

import re

import pytest

from tests.e2e.test_dashboard import wait_text

pytestmark = pytest.mark.e2e
ADDED = "Change only calc.py; say which line you fixed."


def run_id_from(url: str) -> int:
    return int(re.search(r"/runs/(\d+)/", url).group(1))


def test_a_redo_with_an_edited_prompt_is_compared_and_proposed(stack, as_user):
    parent = stack.run("fix-the-test")
    stack.wait_run(parent, lambda r: r["state"] == "finished", timeout=90)
    page = as_user("operator")
    page.goto(f"{stack.url}/runs/{parent}/")
    page.click("#pass-1 >> text=Redo")
    page.wait_for_url(re.compile(rf"/runs/{parent}/fork/\?pass=1&redo=1$"))
    assert "not paid again" in page.inner_text("#fork-plan")
    prompt = page.input_value("textarea[name=prompt]")
    page.fill("textarea[name=prompt]", prompt.rstrip("\n") + "\n" + ADDED + "\n")
    page.click("#fork-submit")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    fork = run_id_from(page.url)
    assert fork != parent
    assert f"Forked from run #{parent} to redo pass 1" in page.inner_text("#forked-from")
    assert ADDED in page.inner_text("#fork-prompt-diff")
    wait_text(page, "#run-cause", "^fulfilled$", timeout=60_000)

    page.click("#forked-from >> text=compare with it")
    page.wait_for_url(re.compile(rf"/runs/{fork}/compare/$"))
    head = page.text_content("#compare-runs thead")
    assert f"A: run #{parent}" in head and f"B: run #{fork}" in head
    assert page.locator("#compare-pass-1 .verdict").count() == 2
    assert "+" + ADDED in page.inner_text("#compare-prompt")

    editor = as_user("reviewer")  # an editor: may propose, not fork
    editor.goto(f"{stack.url}/runs/{fork}/")
    editor.click("#fork-propose")
    editor.wait_for_url(re.compile(r"/changes/\d+/$"))
    added = editor.locator("table.diff tr.diff-add code").all_text_contents()
    assert added == ["+" + ADDED]
    assert editor.locator("table.diff tr.diff-del").count() == 0
