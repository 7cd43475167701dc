"""Where cases are read from (evals/sources.py): a real recipes repository at a commit, folders on
disk in rysh's package layout, the recipe page's cached view, and the built-in coding agent."""

from __future__ import annotations

import os

import pytest

from catalogue.models import Recipe
from catalogue.recipe import parse_recipe
from catalogue.repo import open_repo
from catalogue.sync import recipes_sync
from evals import sources
from evals.format import files_digest
from evals.sources import (
    BUILT_IN_AGENT,
    BUILT_IN_AGENT_PATH,
    NotACasesFolder,
    cases_at,
    cases_on_disk,
    recipe_cases,
    recipe_cases_forget,
)
from tests.recipes_git import recipe_text, work  # noqa: F401 (fixture)

EXPECT = b"files_changed: ['src/**']\nmax_tokens: 9000\n"


def add_case(work, recipe: str, case: str, *, task: str = "Do it.", expect: bytes = EXPECT, files=None):
    work.write(f"{recipe}/evals/{case}/task.md", task)
    (work.path / ".rysh/automations" / recipe / "evals" / case / "expect.yaml").write_bytes(expect)
    for name, data in (files or {}).items():
        target = work.path / ".rysh/automations" / recipe / "evals" / case / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def test_it_reads_a_recipes_cases_at_a_commit(work):
    add_case(work, "tasks/report", "good", files={"files/src/a.py": b"print(1)\n", "judge.md": b"Is it good?"})
    add_case(work, "tasks/report", "broken", expect=b"nope: 1\n")
    add_case(work, "webs/scout", "other", task="Not the report's.")
    first = work.commit("cases")
    add_case(work, "tasks/report", "good", task="Do it better.")
    second = work.commit("a case changed")
    git = open_repo(str(work.path))

    before = git.blobs_read
    cases = cases_at(git, first, ".rysh/automations/tasks/report.md")
    # the report's cases' six files, and nothing else (both task.md hold the same blob: read once)
    assert git.blobs_read - before == 5
    assert [c.name for c in cases] == ["broken", "good"]
    broken, good = cases
    assert [str(e) for e in broken.errors] == [
        ".rysh/automations/tasks/report/evals/broken/expect.yaml:1: nope: unknown key 'nope'; expected one of "
        "files_changed, commands_allowed, commands_forbidden, output_matches, max_tokens"
    ]
    assert good.folder == ".rysh/automations/tasks/report/evals/good"
    assert (good.task, good.rubric, dict(good.files)) == ("Do it.", "Is it good?", {"src/a.py": b"print(1)\n"})
    assert good.expect.max_tokens == 9000
    [later] = [c for c in cases_at(git, second, ".rysh/automations/tasks/report.md") if c.name == "good"]
    assert later.task == "Do it better." and later.digest != good.digest
    assert cases_at(git, first, ".rysh/automations/tasks/none.md") == []

    # the same case read from disk has the same digest
    on_disk = {c.name: c for c in cases_on_disk(work.path / ".rysh/automations/tasks/report/evals")}
    assert on_disk["good"].digest == later.digest


def test_it_reads_every_layout_of_rysh_on_disk(tmp_path):
    package = tmp_path / "pkg"
    for name in ("one", "two"):
        case = package / "evals" / name
        (case / "files/lib").mkdir(parents=True)
        (case / "task.md").write_text(f"---\nuntil: {name} done\n---\nTask {name}.\n")
        (case / "expect.yaml").write_text("commands_forbidden: ['rm -rf *']\n")
        (case / "files/lib/x.py").write_text("x = 1\n")
    (package / "evals/README.md").write_text("not a case")
    (package / "evals/three").mkdir()
    (package / "evals/three/notes.txt").write_text("no task, no expect")

    by_package = cases_on_disk(package)
    assert [c.name for c in by_package] == ["one", "three", "two"]
    assert by_package[0].until == "one done" and dict(by_package[0].files) == {"lib/x.py": b"x = 1\n"}
    assert by_package[0].folder == str(package / "evals/one")
    assert [e.path for e in by_package[1].errors] == [
        f"{package}/evals/three/task.md",
        f"{package}/evals/three/expect.yaml",
    ]
    assert [c.name for c in cases_on_disk(package / "evals")] == ["one", "three", "two"]
    [single] = cases_on_disk(package / "evals/two")
    assert (single.name, single.task, single.errors) == ("two", "Task two.", ())
    assert single.digest == files_digest(
        {
            "task.md": b"---\nuntil: two done\n---\nTask two.\n",
            "expect.yaml": b"commands_forbidden: ['rm -rf *']\n",
            "files/lib/x.py": b"x = 1\n",
        }
    )
    with pytest.raises(NotACasesFolder, match="no such folder"):
        cases_on_disk(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotACasesFolder, match="expected a package folder"):
        cases_on_disk(tmp_path / "empty")


def test_it_never_follows_a_symbolic_link(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    case = tmp_path / "evals/leaky"
    (case / "files").mkdir(parents=True)
    (case / "task.md").write_text("Do it.")
    (case / "expect.yaml").write_text("")
    os.symlink(secret, case / "files/secret.txt")
    os.symlink(tmp_path, case / "files/up")
    os.symlink(case, tmp_path / "evals/alias")
    cases = {c.name: c for c in cases_on_disk(tmp_path / "evals")}
    assert sorted(cases) == ["alias", "leaky"]
    assert "symbolic link" in cases["alias"].errors[0].message
    leaky = cases["leaky"]
    assert dict(leaky.files) == {}
    assert sorted(e.path for e in leaky.errors) == [f"{case}/files/secret.txt", f"{case}/files/up"]


@pytest.mark.django_db
def test_the_recipe_page_reads_the_synced_cases_once_per_commit(work, monkeypatch):
    recipe_cases_forget()
    add_case(work, "tasks/report", "first")
    work.commit("a case")
    recipes_sync()
    recipe = Recipe.objects.get(kind="task", name="report")
    reads = []
    real = sources.cases_at
    monkeypatch.setattr(sources, "cases_at", lambda *a: reads.append(a[1:]) or real(*a))

    assert [c.name for c in recipe_cases(recipe)] == ["first"]
    assert [c.name for c in recipe_cases(recipe)] == ["first"]
    assert len(reads) == 1  # the second view came from the cache

    # a case added without touching the recipe: no new version, yet the page shows it once synced
    add_case(work, "tasks/report", "second")
    head = work.commit("another case")
    recipes_sync()
    recipe.refresh_from_db()
    assert [c.name for c in recipe_cases(recipe)] == ["first", "second"]
    assert reads[-1] == (head, ".rysh/automations/tasks/report.md")
    assert recipe_cases(Recipe.objects.get(kind="web", name="scout")) == []


def test_the_built_in_agent_is_a_valid_code_recipe():
    spec = parse_recipe(BUILT_IN_AGENT, path=BUILT_IN_AGENT_PATH)
    assert spec.kind.value == "code" and spec.workdir == "." and spec.args == ("task",)
    assert "{{task}}" in spec.prompt and "{{task}}" in spec.loop_while.until
