"""A coding recipe with eval cases in a real recipes repository, and the fake Messages server
scripted per case (the suites, grading, ceiling and `auto eval` tests share them)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.recipes_git import git
from tests.workspaces.conftest import CALC, TEST

RECIPE = """
    ---
    description: Fix the failing test by fixing the code, never the test.
    workdir: "."
    loop:
      do:
        max_iterations: 10
        budget:
          size: 1b
    ---
    Fix the failing test in {{workdir}}: run `python3 -m unittest -q`, fix the code, never the test.
"""
FOLDER = ".rysh/automations/tasks"
FIX = {"path": "calc.py", "old_string": "(len(values) - 1)", "new_string": "len(values)"}
GOOD_EXPECT = """\
files_changed: ["calc.py"]
commands_forbidden: ["rm *"]
output_matches: ["(?i)fixed"]
"""


def bash(command):
    return {"text": f"$ {command}", "tool_calls": [{"name": "bash", "input": {"command": command}}]}


def edit(**change):
    return {"text": "editing", "tool_calls": [{"name": "edit", "input": change}]}


def write(path, content):
    return {"text": "writing", "tool_calls": [{"name": "file_write", "input": {"path": path, "content": content}}]}


# what the agent does in each case: the good one fixes calc.py; the bad one also rewrites the test
TURNS = {
    "good": [bash("python3 -m unittest -q"), edit(**FIX), {"text": "Fixed mean() in calc.py; the tests pass."}],
    "bad": [
        edit(**FIX),
        write("test_calc.py", "import unittest\n"),
        {"text": "Fixed it (and simplified the test)."},
    ],
}


def case_files(name: str, *, task: str, expect: str, judge: str | None = None, files: bool = True) -> dict:
    out = {f"{name}/task.md": task, f"{name}/expect.yaml": expect}
    if judge is not None:
        out[f"{name}/judge.md"] = judge
    if files:
        out[f"{name}/files/calc.py"] = CALC
        out[f"{name}/files/test_calc.py"] = TEST
    return out


def two_cases() -> dict:
    good = case_files(
        "good",
        task="---\nuntil: calc.py computes the mean\n---\n[case good] The mean is wrong; fix calc.py.\n",
        expect=GOOD_EXPECT,
        judge="The fix is in calc.py and the test is untouched.\n",
    )
    bad = case_files("bad", task="[case bad] The mean is wrong; fix it.\n", expect=GOOD_EXPECT)
    return {**good, **bad}


def write_recipe(repo: Path, cases: dict, *, name: str = "fix", text: str = RECIPE) -> None:
    folder = repo / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(textwrap.dedent(text).lstrip())
    for relative, content in cases.items():
        path = folder / name / "evals" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def commit(repo: Path, message: str = "recipes") -> str:
    if not (repo / ".git").exists():
        git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def recipes(tmp_path, results_root, settings):
    """tmp_path/repo: the recipes repository, holding the coding recipe task/fix and its two
    cases, committed and synced into the catalogue."""
    from catalogue.sync import recipes_sync

    settings.DATA_DIR = tmp_path / "data"
    repo = tmp_path / "repo"
    write_recipe(repo, two_cases())
    commit(repo)
    recipes_sync()
    return repo


def case_of(body: dict, names) -> str | None:
    first = json.dumps(body.get("messages", [{}])[0])
    return next((name for name in names if f"[case {name}]" in first), None)


def script(fake, turns: dict | None = None, verdict: str = "YES\nthe fix is in calc.py") -> None:
    """Answer judge and rubric calls with `verdict`, each case's task calls from its turns."""
    turns = turns or TURNS

    def respond(body):
        if "independent judge" in str(body.get("system")):
            return {"text": verdict}
        name = case_of(body, turns)
        said = sum(1 for m in body.get("messages", []) if m["role"] == "assistant")
        mine = turns.get(name) or [{"text": "Done."}]
        return mine[min(said, len(mine) - 1)]

    fake.responder = respond


def messages_requests(fake) -> list:
    return [r for r in fake.requests if r.path.endswith("/v1/messages")]
