"""Real git repositories in temporary folders for the sync, editor and review tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

AUTHOR = ["-c", "user.name=Ada Outside", "-c", "user.email=ada@example.com"]

GOOD = """---
description: {description}
loop:
  do:
    budget:
      size: {size}
  while:
    max_iterations: 5
    budget: {total}
    prompts:
      until: The report exists.
---
Write the report.
"""


def recipe_text(description: str = "A task", size: str = "4b", total: str = "20b") -> str:
    return GOOD.format(description=description, size=size, total=total)


BROKEN = "---\nloop:\n  do:\n    interval: 900\n---\nx\n"


def git(repo: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *AUTHOR, *args], check=True, text=True, capture_output=True, input=input
    ).stdout.strip()


class WorkRepo:
    """A working clone someone commits to by hand."""

    def __init__(self, path: Path):
        self.path = path

    def write(self, rel: str, text: str) -> None:
        target = self.path / ".rysh/automations" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def remove(self, rel: str) -> None:
        (self.path / ".rysh/automations" / rel).unlink()

    def commit(self, message: str = "change", **files: str | None) -> str:
        for rel, text in files.items():
            rel = rel.replace("__", "/") + ".md"
            if text is None:
                self.remove(rel)
            else:
                self.write(rel, text)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "--allow-empty", "-m", message)
        return git(self.path, "rev-parse", "HEAD")

    def head(self, branch: str = "main") -> str:
        return git(self.path, "rev-parse", f"refs/heads/{branch}")

    def push(self) -> None:
        git(self.path, "push", "-q", "origin", "main")

    def pull(self) -> None:
        git(self.path, "pull", "-q", "--ff-only", "origin", "main")


def make_repo(path: Path, **files: str) -> WorkRepo:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    work = WorkRepo(path)
    work.commit("Initial recipes", **files)
    return work


@pytest.fixture
def work(tmp_path, settings) -> WorkRepo:
    """A local recipes repository (a working clone) configured as RYSH_RECIPES_REPO."""
    repo = make_repo(tmp_path / "recipes", tasks__report=recipe_text(), webs__scout=recipe_text("Scout the web"))
    settings.RYSH_RECIPES_REPO = str(repo.path)
    settings.RYSH_RECIPES_BRANCH = "main"
    settings.DATA_DIR = tmp_path / "data"
    return repo


@pytest.fixture
def remote(tmp_path, settings) -> WorkRepo:
    """A bare 'remote' configured by URL, and a clone of it someone else pushes from."""
    seed = make_repo(tmp_path / "seed", tasks__report=recipe_text(), webs__scout=recipe_text("Scout the web"))
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed.path), str(bare)], check=True)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(bare), str(other)], check=True)
    settings.RYSH_RECIPES_REPO = f"file://{bare}"
    settings.RYSH_RECIPES_BRANCH = "main"
    settings.DATA_DIR = tmp_path / "data"
    clone = WorkRepo(other)
    clone.bare = bare
    return clone


def make_user(username: str, role: str | None = "editor", **fields):
    """A user in one of the role groups (viewer, operator, editor, admin)."""
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(username, f"{username}@example.com", "pw", **fields)
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def login(client, user):
    client.force_login(user)
    return client
