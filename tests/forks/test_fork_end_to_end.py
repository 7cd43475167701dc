"""Forks on the real anthropic SDK against the fake Messages server (docs/forks.md): a coding run
whose judge says NO at passes 1-3; a fork from pass 2 with an edited prompt starts with the working
copy and the results exactly as they stood after pass 2 (file by file, against the pass's point
and its snapshot), spends nothing on passes 1-2, and is fulfilled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from catalogue.sync import recipes_sync
from reviews.models import ChangeRequest
from reviews.services import text_diff
from runs import services, worker
from runs.forks import ForkEdits, run_fork
from runs.models import LedgerEntry, Pass, Run
from runs.results import snapshots
from runs.wiring import arm_run
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.forks.fork_fixtures import files_of_commit, files_of_folder, files_of_tree, passes_recipe
from tests.recipes_git import git
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import code_repo, write_recipe  # noqa: F401 (fixture)
from workspaces.copies import Copy
from workspaces.models import Workspace, WorkspacePass

pytestmark = pytest.mark.django_db(transaction=True)

THREE_PASSES = passes_recipe(3)
EDITED = "Fix calc.mean so that the test passes: divide by len(values). Change calc.py only."


class Server:
    """Answers the fake server's calls: a task pass marks the copy and saves results (its number
    read from the seeded prompt), then says it is done; the judge says what `verdicts` holds next."""

    def __init__(self, fake, verdicts: list[str]):
        self.verdicts, self.judged, self.prompts = list(verdicts), 0, []
        fake.responder = self.answer

    def answer(self, body: dict) -> dict:
        if "independent judge" in str(body.get("system")):
            self.judged += 1
            return {"text": self.verdicts.pop(0)}
        messages = body["messages"]
        if len(messages) > 1:
            return {"text": "Done."}
        first = messages[0]["content"]
        first = first if isinstance(first, str) else first[0]["text"]
        self.prompts.append(first)
        found = re.search(r"This is pass (\d+) of a loop", first)
        n = int(found[1]) if found else 1
        return {
            "text": f"pass {n}",
            "tool_calls": [
                {"name": "bash", "input": {"command": f"echo pass-{n} >> log.txt && echo {n} > only-{n}.txt"}},
                {"name": "save_result", "input": {"filename": "notes.md", "content": f"notes after pass {n}\n"}},
                {"name": "save_result", "input": {"filename": f"pass-{n}.md", "content": f"pass {n} result\n"}},
            ],
        }


def kept(run: Run, number: int) -> dict[str, bytes]:
    found = {}
    for row in Pass.objects.get(run=run, number=number).results.all():
        with snapshots.open_result(row) as handle:
            found[row.name] = handle.read()
    return found


def test_a_fork_from_pass_2_with_an_edited_prompt_is_fulfilled_without_paying_passes_1_and_2(fake_anthropic, code_repo):
    write_recipe(code_repo, workdir="pkg", name="three", text=THREE_PASSES)
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "a three-pass coding recipe")
    recipes_sync()  # a recipe of the catalogue, so a fork's edit can be proposed as a change
    server = Server(fake_anthropic, ["NO\nthe test still fails (1)", "NO\nthe test still fails (2)", "NO\nstill (3)"])
    parent = services.run_start(kind="task", name_or_path="three", args=[], provider="anthropic")
    assert parent.recipe_version is not None
    worker.execute(parent.pk, arm_run)  # the real SDK against the fake Messages server
    parent.refresh_from_db()
    assert parent.cause == "unfulfilled: the 3-pass cap is reached"
    assert list(parent.passes.values_list("verdict", flat=True)) == ["NO", "NO", "NO"]
    parent_calls = LedgerEntry.objects.filter(run=parent).count()

    server.verdicts = ["YES\nthe test passes"]
    fork = run_fork(run=parent, pass_number=2, user=None, edits=ForkEdits(prompt=EDITED))
    # as they stood after pass 2, before any worker took the fork: results and working copy
    assert files_of_folder(Path(fork.output_dir)) == kept(parent, 2)
    assert set(kept(parent, 2)) == {"notes.md", "pass-1.md", "pass-2.md"}
    worker.execute(fork.pk, arm_run)
    fork.refresh_from_db()
    assert fork.cause == "fulfilled"

    point = WorkspacePass.objects.get(workspace__run=parent, pass_number=2)
    parent_git = Copy(Path(Workspace.objects.get(run=parent).home)).git_dir
    at_point = files_of_commit(parent_git, point.point)
    assert at_point["pkg/log.txt"] == b"pass-1\npass-2\n" and "pkg/only-3.txt" not in at_point
    workspace = Workspace.objects.get(run=fork)
    fork_copy = Copy(Path(workspace.home))
    assert workspace.base_commit == point.point
    started = files_of_commit(fork_copy.git_dir, workspace.base_commit)
    assert started == at_point  # the fork's copy was made from the point, file by file
    now = files_of_tree(fork_copy.tree)
    assert now["pkg/log.txt"] == b"pass-1\npass-2\npass-3\n"  # the fork's pass 3 went on from there
    assert {k: v for k, v in now.items() if k != "pkg/log.txt" and k != "pkg/only-3.txt"} == {
        k: v for k, v in at_point.items() if k != "pkg/log.txt"
    }

    # spends nothing on passes 1-2: its ledger holds its own calls, all in pass 3
    assert set(LedgerEntry.objects.filter(run=fork).values_list("pass_number", flat=True)) == {3}
    assert LedgerEntry.objects.filter(run=parent).count() == parent_calls
    assert list(fork.passes.values_list("number", "verdict")) == [(3, "YES")]
    seeded = server.prompts[-1]
    assert seeded.startswith(EDITED) and "This is pass 3 of a loop." in seeded
    assert "the test still fails (2)" in seeded and "pass 2 result" in seeded
    assert (Path(fork.output_dir) / "pass-3.md").read_text() == "pass 3 result\n"
    assert server.judged == 4 and len(server.prompts) == 4  # every call went to the fake server

    viewer = client_for(user_with("viewer"))
    assert viewer.get(f"/runs/{fork.pk}/").status_code == 200
    assert viewer.get(f"/runs/{parent.pk}/").status_code == 200
    # the compare page sets both side by side; "Propose this edit" opens a change of the prompt alone
    page = viewer.get(f"/runs/{fork.pk}/compare/").content.decode()
    assert f"run #{parent.pk}" in page and f"run #{fork.pk}" in page and "+" + EDITED in page
    editor = client_for(user_with("editor"))
    assert editor.post(f"/runs/{fork.pk}/propose/").status_code == 302
    change = ChangeRequest.objects.get()
    diff = [(d.kind, d.text) for d in text_diff(change.base_text, change.proposed_text) if d.kind in ("add", "del")]
    assert diff == [("del", "Make the failing test pass by fixing the code, never the test."), ("add", EDITED)]
