"""A run's working copy in git plumbing, on real repositories."""

import subprocess

import pytest

from tests.recipes_git import git
from workspaces import copies
from workspaces.copies import Copy, CopyError


@pytest.fixture
def source(tmp_path):
    repo = tmp_path / "source"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "pkg").mkdir()
    (repo / "pkg/calc.py").write_text("def mean(v):\n    return sum(v) / (len(v) - 1)\n")
    (repo / "pkg/test_calc.py").write_text("assert True\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "later.txt").write_text("a later commit\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    return repo, first


def test_it_copies_the_armed_commit_on_a_branch_of_its_own(tmp_path, source):
    repo, first = source
    before = git(repo, "for-each-ref")
    copy = copies.create(tmp_path / "ws/1", source=repo, commit=first, branch="rysh/job/run-1")
    assert (copy.tree / "pkg/calc.py").is_file()
    assert not (copy.tree / "later.txt").exists()  # the armed commit, not the branch's tip
    assert copies.git(copy, "rev-parse", "--abbrev-ref", "HEAD").strip() == "rysh/job/run-1"
    assert (copy.tree / ".git").is_dir() and not any((copy.tree / ".git").iterdir())  # the mount point
    assert git(repo, "for-each-ref") == before  # the source's branches untouched
    assert git(repo, "status", "--porcelain") == ""  # and its checkout


def test_it_measures_changes_as_trees_without_moving_the_copy(tmp_path, source):
    repo, first = source
    copy = copies.create(tmp_path / "ws/1", source=repo, commit=first, branch="b")
    start = copies.tree_of(copy, first)
    (copy.tree / "pkg/calc.py").write_text("def mean(v):\n    return sum(v) / len(v)\n")
    (copy.tree / "pkg/new.py").write_text("x = 1\n")
    (copy.tree / "blob.bin").write_bytes(b"\0\1\2")
    tree = copies.snapshot(copy)
    rows = {s.path: s for s in copies.stat(copy, start, tree)}
    assert (rows["pkg/calc.py"].added, rows["pkg/calc.py"].removed, rows["pkg/calc.py"].status) == (1, 1, "M")
    assert rows["pkg/new.py"].status == "A" and rows["blob.bin"].binary
    patch = copies.patch(copy, start, tree)
    assert "-    return sum(v) / (len(v) - 1)" in patch and "+    return sum(v) / len(v)" in patch
    assert copies.git(copy, "status", "--porcelain").count("??") == 2  # the copy's own index did not move


def test_it_ignores_a_git_folder_the_agent_writes_into_the_tree(tmp_path, source):
    repo, first = source
    copy = copies.create(tmp_path / "ws/1", source=repo, commit=first, branch="b")
    (copy.tree / ".git/config").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    copies.ensure_mount_point(copy)
    assert not any((copy.tree / ".git").iterdir())
    copy.tree.joinpath(".gitattributes").write_text("* filter=evil\n")
    copies.git(copy, "config", "--get", "core.bare")  # our config still answers
    assert copies.snapshot(copy)  # no filter runs: it is not defined in our config


def test_it_commits_the_work_and_pushes_a_new_branch_never_forced(tmp_path, source):
    repo, first = source
    copy = copies.create(tmp_path / "ws/1", source=repo, commit=first, branch="rysh/job/run-1")
    (copy.tree / "pkg/calc.py").write_text("fixed\n")
    sha = copies.commit(copy, branch="rysh/job/run-1", message="keep", name="Ada", email="ada@example.com")
    assert copies.commit(copy, branch="rysh/job/run-1", message="again", name="Ada", email="a@b") == sha
    assert copies.git(copy, "status", "--porcelain") == ""
    copies.push(copy, commit=sha, branch="rysh/job/run-1", destination=repo)
    assert git(repo, "rev-parse", "refs/heads/rysh/job/run-1") == sha
    assert git(repo, "show", f"{sha}:pkg/calc.py") == "fixed"
    assert git(repo, "log", "-1", "--format=%an", sha) == "Ada"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"  # the source's checkout stays
    assert copies.branch_tips(copy, repo, "rysh/job/run-1") == {"rysh/job/run-1": sha}


def test_a_push_moves_a_branch_forward_and_never_over_other_work(tmp_path, source):
    repo, first = source
    copy = copies.create(tmp_path / "ws/1", source=repo, commit=first, branch="rysh/job/run-1")
    (copy.tree / "a.txt").write_text("one\n")
    one = copies.commit(copy, branch="rysh/job/run-1", message="one", name="Ada", email="a@b")
    copies.push(copy, commit=one, branch="rysh/job/run-1", destination=repo)
    (copy.tree / "a.txt").write_text("two\n")
    two = copies.commit(copy, branch="rysh/job/run-1", message="two", name="Ada", email="a@b")
    assert copies.contains(copy, one, two) and not copies.contains(copy, two, one)
    copies.push(copy, commit=two, branch="rysh/job/run-1", destination=repo)  # a fast-forward
    assert git(repo, "rev-parse", "refs/heads/rysh/job/run-1") == two
    git(repo, "branch", "-f", "rysh/job/run-1", "main")  # someone else's work under that name
    other = git(repo, "rev-parse", "main")
    assert not copies.contains(copy, other, two)  # a commit the copy never had
    with pytest.raises(copies.BranchMoved, match="holds commits this work does not"):
        copies.push(copy, commit=two, branch="rysh/job/run-1", destination=repo)
    assert git(repo, "rev-parse", "refs/heads/rysh/job/run-1") == other  # left as it was
    tips = copies.branch_tips(copy, repo, "rysh/job/run-1")
    assert tips == {"rysh/job/run-1": other}


def test_it_takes_a_branch_name_git_takes_and_no_option():
    assert copies.valid_branch("rysh/fix/ab12cd-run-5-2")
    for bad in ("", "-f", "rysh/a..b", "rysh/a b", "rysh/x.lock", "rysh/a~1", "rysh/*"):
        assert not copies.valid_branch(bad), bad


def test_it_refuses_a_commit_the_source_does_not_have(tmp_path, source):
    repo, _ = source
    with pytest.raises(CopyError, match="fetch failed"):
        copies.create(tmp_path / "ws/1", source=repo, commit="1" * 40, branch="b")
    assert not (tmp_path / "ws/1").exists()
    assert [p.name for p in (tmp_path / "ws").iterdir()] == []  # the half-made copy is gone


def test_it_makes_a_copy_git_reads_from_inside_the_tree(tmp_path, source):
    repo, first = source
    copy = copies.create(tmp_path / "ws/1", source=repo, commit=first, branch="b")
    (copy.tree / "pkg/calc.py").write_text("changed\n")
    # what `git status` inside the sandbox sees: the tree's .git is the copy's git directory
    done = subprocess.run(
        ["git", f"--git-dir={copy.git_dir}", "status", "--porcelain"], cwd=copy.tree, capture_output=True, text=True
    )
    assert done.stdout.strip() == "M pkg/calc.py"
    assert Copy(copy.home).exists


def test_without_the_sandbox_the_tree_has_a_git_file_and_git_works_in_it(tmp_path, source):
    repo, first = source
    copy = copies.create(tmp_path / "ws/1", source=repo, commit=first, branch="b")
    copies.prepare_git(copy, sandboxed=False)
    assert (copy.tree / ".git").read_text() == f"gitdir: {copy.git_dir}\n"
    (copy.tree / "pkg/calc.py").write_text("changed\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no GIT_DIR: git finds it from the tree
    done = subprocess.run(
        ["git", "status", "--porcelain"], cwd=copy.tree / "pkg", capture_output=True, text=True, env=env
    )
    assert done.stdout.strip() == "M pkg/calc.py", done.stderr
    assert copies.snapshot(copy)  # our own calls still name both; the gitfile is never the work
    assert ".git" not in copies.git(copy, "ls-tree", "-r", "--name-only", copies.snapshot(copy))
    copies.prepare_git(copy, sandboxed=True)  # the sandbox back on: its mount point again
    assert (copy.tree / ".git").is_dir() and not any((copy.tree / ".git").iterdir())


HOSTILE_GITMODULES = '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ./vendor/lib\n\tupdate = !true\n'


def nested_repository(folder):
    """A git repository of its own inside the copy, with one commit (what `git add -A` would
    record as a gitlink: a link to that commit, none of its files)."""
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q")
    (folder / "lib.py").write_text("x = 1\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "lib")


def test_a_repository_inside_the_copy_and_a_hostile_gitmodules_break_no_git_call(tmp_path, source):
    """`update = !command` in .gitmodules makes git die wherever it reads that file ("invalid
    value for 'submodule.lib.update'"): every diff did, so the Changes page and the judge's stat
    failed. A repository the agent made inside the copy is no part of the work: git could only
    record it as a link to one of its commits, which no diff shows and no keep carries."""
    repo, first = source
    copy = copies.create(tmp_path / "ws/1", source=repo, commit=first, branch="b")
    start = copies.tree_of(copy, first)
    nested_repository(copy.tree / "vendor/lib")
    (copy.tree / ".gitmodules").write_text(HOSTILE_GITMODULES)
    (copy.tree / "pkg/calc.py").write_text("fixed\n")

    tree = copies.snapshot(copy, base=first)

    assert {s.path: s.status for s in copies.stat(copy, start, tree)} == {".gitmodules": "A", "pkg/calc.py": "M"}
    patch = copies.patch(copy, start, tree, binary=True)
    assert "+fixed" in patch and "Subproject commit" not in patch
    sha = copies.commit(copy, branch="b", message="keep", name="Ada", email="a@b", base=first)
    kept = copies.git(copy, "ls-tree", "-r", "--name-only", sha).split()
    assert kept == [".gitmodules", "pkg/calc.py", "pkg/test_calc.py"]  # what the diff showed, nothing else


def test_a_submodule_of_the_repository_stays_at_the_commit_its_start_names(tmp_path, source):
    repo, first = source
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{first},vendor/lib")  # a submodule's link
    (repo / ".gitmodules").write_text(HOSTILE_GITMODULES)
    git(repo, "add", ".gitmodules")
    git(repo, "commit", "-q", "-m", "a submodule")
    base = git(repo, "rev-parse", "HEAD")
    copy = copies.create(tmp_path / "ws/1", source=repo, commit=base, branch="b")
    nested_repository(copy.tree / "vendor/lib")  # the agent fills it and commits there: it moved

    tree = copies.snapshot(copy, base=base)

    assert tree == copies.tree_of(copy, base)  # nothing a diff cannot show would be kept
    assert copies.stat(copy, base, tree) == []
