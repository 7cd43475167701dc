from pathlib import Path

import pytest

from catalogue.repo import (
    Identity,
    PushRejected,
    RepoError,
    is_remote,
    open_repo,
    split_recipe_path,
)
from tests.recipes_git import BROKEN, git, make_repo, recipe_text, remote  # noqa: F401

ME = Identity("Grace Editor", "grace@example.com")


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "r", tasks__report=recipe_text(), webs__scout=recipe_text("s"))


def test_it_tells_urls_from_paths(tmp_path):
    assert is_remote("https://example.com/team/recipes.git")
    assert is_remote("git@github.com:team/recipes.git")
    assert is_remote("file:///srv/recipes.git")
    assert not is_remote(str(tmp_path))
    assert not is_remote("relative/path")


def test_it_knows_recipe_paths_from_other_files():
    assert split_recipe_path(".rysh/automations/webs/scout.md") == ("webs", "scout")
    assert split_recipe_path(".rysh/automations/tasks/a.b-c.md") == ("tasks", "a.b-c")
    assert split_recipe_path(".rysh/automations/other/x.md") is None
    assert split_recipe_path(".rysh/automations/tasks/sub/x.md") is None
    assert split_recipe_path(".rysh/automations/tasks/notes.txt") is None


def test_it_refuses_a_missing_directory(tmp_path):
    with pytest.raises(RepoError, match="no such directory"):
        open_repo(str(tmp_path / "nope"))


def test_it_reads_the_tree_and_blobs_at_a_commit(repo):
    git_repo = open_repo(str(repo.path))
    head = git_repo.head("main")
    tree = git_repo.tree(head)
    assert sorted(tree) == [".rysh/automations/tasks/report.md", ".rysh/automations/webs/scout.md"]
    blobs = git_repo.read_blobs(tree.values())
    assert blobs[tree[".rysh/automations/tasks/report.md"]].decode() == recipe_text()
    assert git_repo.blobs_read == 2
    assert git_repo.read_file(head, ".rysh/automations/webs/scout.md") == recipe_text("s")
    assert git_repo.read_file(head, ".rysh/automations/webs/none.md") is None


def test_it_walks_the_log_with_authors_messages_and_changes(repo):
    first = repo.head()
    repo.commit("Break it\n\nwith a body", tasks__report=BROKEN)
    repo.commit("Remove scout", webs__scout=None)
    git_repo = open_repo(str(repo.path))
    commits = git_repo.log(first, git_repo.head("main"))
    assert [c.message for c in commits] == ["Break it\n\nwith a body", "Remove scout"]
    assert commits[0].author == "Ada Outside <ada@example.com>"
    assert [(c.status, c.path) for c in commits[1].changes] == [("D", ".rysh/automations/webs/scout.md")]
    assert [c.status for c in git_repo.changes(first, git_repo.head("main"))] == ["M", "D"]


def test_it_commits_to_a_branch_without_touching_the_checkout(repo):
    (repo.path / "scratch.txt").write_text("uncommitted work")
    git(repo.path, "add", "scratch.txt")  # staged, too
    git_repo = open_repo(str(repo.path))
    base = git_repo.head("main")
    tree = git_repo.write_tree(
        base, {".rysh/automations/tasks/report.md": "new text\n", ".rysh/automations/webs/scout.md": None}
    )
    sha = git_repo.commit_tree(tree, [base], "Edit", author=ME)
    assert git_repo.set_ref("rysh/cr-1-report", sha, None)
    assert not git_repo.set_ref("rysh/cr-1-report", sha, None)  # exists: the CAS refuses
    assert git_repo.read_file(sha, ".rysh/automations/tasks/report.md") == "new text\n"
    assert git_repo.read_file(sha, ".rysh/automations/webs/scout.md") is None
    assert git(repo.path, "log", "-1", "--format=%an <%ae>", sha) == "Grace Editor <grace@example.com>"
    # the checkout, its index and HEAD are as they were
    assert git(repo.path, "rev-parse", "HEAD") == base
    assert git(repo.path, "status", "--porcelain") == "A  scratch.txt"
    assert (repo.path / ".rysh/automations/webs/scout.md").exists()


def test_it_fast_forwards_merges_and_reports_conflicts(repo):
    git_repo = open_repo(str(repo.path))
    base = git_repo.head("main")
    path = ".rysh/automations/tasks/report.md"
    ours = git_repo.commit_tree(git_repo.write_tree(base, {path: recipe_text("ours")}), [base], "ours", author=ME)
    assert git_repo.merge(target=base, tip=ours, message="m", author=ME, committer=ME).fast_forward
    # the branch moves elsewhere on another file: a clean merge commit with two parents
    moved = repo.commit("Other file", tasks__other=recipe_text("other"))
    merge = git_repo.merge(target=moved, tip=ours, message="Merge", author=ME, committer=ME)
    assert merge.sha and not merge.fast_forward and not merge.conflicts
    assert git(repo.path, "log", "-1", "--format=%P", merge.sha) == f"{moved} {ours}"
    assert git_repo.read_file(merge.sha, path) == recipe_text("ours")
    # ... and on the same lines: a conflict, nothing written
    clash = repo.commit("Same file", tasks__report=recipe_text("theirs"))
    merge = git_repo.merge(target=clash, tip=ours, message="Merge", author=ME, committer=ME)
    assert merge.sha is None and merge.conflicts == (path,)
    assert git_repo.head("main") == clash


def test_it_refuses_to_move_a_branch_that_moved(repo):
    git_repo = open_repo(str(repo.path))
    old = git_repo.head("main")
    new = git_repo.commit_tree(git_repo.write_tree(old, {}), [old], "empty", author=ME)
    repo.commit("Someone else", tasks__x=recipe_text())
    with pytest.raises(PushRejected):
        git_repo.publish("main", new, old)


def test_it_mirrors_a_remote_and_pushes_without_force(remote, settings):
    git_repo = open_repo(settings.RYSH_RECIPES_REPO)
    assert git_repo.remote and Path(git_repo.git_dir).is_relative_to(settings.DATA_DIR)
    git_repo.refresh("main")
    old = git_repo.head("main")
    assert old == remote.head()
    new = git_repo.commit_tree(git_repo.write_tree(old, {}), [old], "ours", author=ME)
    remote.commit("Theirs", tasks__x=recipe_text())
    remote.push()
    with pytest.raises(PushRejected):
        git_repo.publish("main", new, old)
    git_repo.refresh("main")
    assert git_repo.head("main") == remote.head()
    git_repo.publish("rysh/cr-1-x", new, None)
    assert git(remote.bare, "rev-parse", "refs/heads/rysh/cr-1-x") == new


def test_it_refuses_a_plain_folder_inside_another_checkout(repo):
    plain = repo.path / "not-a-repo"
    plain.mkdir()
    with pytest.raises(RepoError, match="is not a git repository"):
        open_repo(str(plain))
