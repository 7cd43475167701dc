"""The file tools of a coding recipe: what each does, the ways out of the working copy each
refuses, and hypothesis for "a failed edit list writes nothing", "an edit is a replace" and
"resolve() never leaves the copy". No database: the copy is a tmp_path folder."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agents.file_tools import FILE_TOOLS, GREP_FILE_CAP, FileTools
from agents.task_tools import ToolRefused
from budgets.guard import cut_marker

SECRET = "TOP-SECRET-TOKEN"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the copy, holding what no tool may read or write."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text(f"{SECRET}\n")
    return folder


@pytest.fixture
def copy(tmp_path: Path, outside: Path) -> Path:
    """A working copy: source, a .git, and links that stay in and links that lead out."""
    root = tmp_path / "copy"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text(f"[core]\n# {SECRET}\n")
    (root / "README.md").write_text("# Demo\nhello world\n")
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'hello'\n")
    (root / "etc").symlink_to("/etc")
    (root / "out-dir").symlink_to(outside)
    (root / "secret-link").symlink_to(outside / "secret.txt")
    (root / "dangling-out").symlink_to(outside / "not-yet.txt")
    (root / "git-link").symlink_to(root / ".git")
    (root / "app-link.py").symlink_to(root / "src" / "app.py")
    return root


@pytest.fixture
def tools(copy: Path) -> FileTools:
    return FileTools(copy)


def ok(tools: FileTools, name: str, **arguments) -> str:
    result = tools.call(name, arguments)
    assert not result.is_error, result.content
    return result.content


def refused(tools: FileTools, name: str, **arguments) -> str:
    result = tools.call(name, arguments)
    assert result.is_error, result.content
    assert result.content.startswith(f"{name}: "), "an error names its tool"
    return result.content


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".writing")]


# -- the port --


def test_it_offers_the_five_tools_in_the_messages_api_shape(tools):
    assert [t["name"] for t in tools.specs()] == ["file_read", "edit", "file_write", "grep", "glob"]
    assert tools.specs() == FILE_TOOLS
    for spec in FILE_TOOLS:
        assert spec["description"] and spec["input_schema"]["type"] == "object"
        assert set(spec["input_schema"]["required"]) <= set(spec["input_schema"]["properties"])


def test_it_answers_an_unknown_tool_or_bad_arguments_with_an_error(tools):
    assert tools.call("bash", {"command": "ls"}).is_error
    assert "bad arguments" in refused(tools, "file_read")
    result = tools.call("file_read", ["README.md"])
    assert result.is_error and "arguments must be an object" in result.content
    assert "bad arguments" in refused(tools, "file_read", path="README.md", colour="red")
    assert "bad arguments" in refused(tools, "file_write", path="x.txt")


def test_it_refuses_a_start_outside_the_copy(copy, outside):
    with pytest.raises(ValueError):
        FileTools(copy, start=outside)
    with pytest.raises(ValueError):
        FileTools(copy, start="../outside")
    with pytest.raises(ValueError):
        FileTools(copy, start=".git")


def test_it_never_shows_the_servers_folders_in_an_os_error(tools, copy):
    message = refused(tools, "file_write", path="src/app.py/inner.txt", content="x")
    assert str(copy) not in message and str(copy.parent) not in message


# -- file_read --


def test_it_reads_a_file_with_line_numbers_like_cat_n(tools):
    assert ok(tools, "file_read", path="README.md") == "     1\t# Demo\n     2\thello world"


def test_it_reads_a_part_and_says_which_lines_of_how_many(tools, copy):
    (copy / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    text = ok(tools, "file_read", path="long.txt", offset=3, limit=2)
    header, *lines = text.split("\n")
    assert "lines 3-4 of 10" in header and "offset=5" in header
    assert lines == ["     3\tline 3", "     4\tline 4"]
    tail = ok(tools, "file_read", path="long.txt", offset=9)
    assert tail.split("\n")[0] == "[long.txt: lines 9-10 of 10]"


def test_it_reads_2000_lines_unless_told_otherwise(tools, copy):
    (copy / "big.txt").write_text("x\n" * 2500)
    text = ok(tools, "file_read", path="big.txt")
    assert "lines 1-2000 of 2500" in text.split("\n")[0]
    assert text.split("\n")[-1] == "  2000\tx"


def test_it_says_when_the_offset_is_past_the_end(tools):
    assert "offset 3 is past the end: README.md has 2 lines" in refused(tools, "file_read", path="README.md", offset=3)


@pytest.mark.parametrize("offset, limit", [(0, 10), (-1, 10), ("2", 10), (True, 10), (1, 0), (1, 2.5)])
def test_it_refuses_an_offset_or_limit_that_is_no_whole_number_from_1(tools, offset, limit):
    assert "must be a whole number from 1" in refused(tools, "file_read", path="README.md", offset=offset, limit=limit)


def test_it_cuts_lines_longer_than_2000_characters(tools, copy):
    (copy / "min.js").write_text("a" * 2500 + "\nshort\n")
    first, second = ok(tools, "file_read", path="min.js").split("\n")
    assert first == "     1\t" + "a" * 2000 + "… [line cut: 2500 characters]"
    assert second == "     2\tshort"


def test_it_says_an_empty_file_is_empty(tools, copy):
    (copy / "empty.txt").write_text("")
    assert "empty file" in ok(tools, "file_read", path="empty.txt")


def test_it_shows_a_crlf_file_without_its_carriage_returns_and_says_so(tools, copy):
    (copy / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    text = ok(tools, "file_read", path="dos.txt")
    assert "CRLF" in text.split("\n")[0]
    assert text.split("\n")[1:] == ["     1\tone", "     2\ttwo"]


@pytest.mark.parametrize(
    "data",
    [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"text\x00more", b"caf\xe9 latin-1\n", b"ok\n" * 5000 + b"\xff"],
    ids=["png", "nul", "latin-1", "bad-utf8-past-8kb"],
)
def test_it_refuses_a_binary_file_saying_its_size(tools, copy, data):
    (copy / "blob.bin").write_bytes(data)
    assert f"binary file, {len(data)} bytes: not shown" in refused(tools, "file_read", path="blob.bin")


def test_it_refuses_a_folder_and_points_to_glob(tools):
    assert "use glob" in refused(tools, "file_read", path="src")
    assert "use glob" in refused(tools, "file_read", path=".")


def test_it_reports_a_missing_file(tools):
    assert "no such file 'nope.txt'" in refused(tools, "file_read", path="nope.txt")


def test_it_refuses_to_read_a_fifo_instead_of_hanging(tools, copy):
    os.mkfifo(copy / "pipe")

    def hung(*_):
        raise AssertionError("file_read hung on a FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    try:
        assert "not a regular file" in refused(tools, "file_read", path="pipe")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_it_cuts_a_read_longer_than_the_room_left(tools, copy):
    (copy / "long.txt").write_text("word " * 400)
    whole = ok(tools, "file_read", path="long.txt")
    tools.room_chars = 100
    cut = ok(tools, "file_read", path="long.txt")
    assert cut == whole[:100] + "\n" + cut_marker(len(whole), 100)


def test_it_reads_paths_relative_to_the_working_folder_and_absolute_ones_inside_the_copy(copy):
    tools = FileTools(copy, start="src")
    assert "def main" in ok(tools, "file_read", path="app.py")
    assert "# Demo" in ok(tools, "file_read", path="../README.md")
    assert "def helper" in ok(tools, "file_read", path=str(copy / "src" / "pkg" / "util.py"))


def test_it_reads_through_a_link_that_stays_inside(tools):
    assert "def main" in ok(tools, "file_read", path="app-link.py")


# -- edit --


def test_it_replaces_a_unique_string_and_says_where(tools, copy):
    summary = ok(tools, "edit", path="src/app.py", old_string="return 1", new_string="return 2\n    # two")
    assert (copy / "src" / "app.py").read_text() == "def main():\n    return 2\n    # two\n"
    assert "src/app.py" in summary and "line 2" in summary and "1 line → 2 lines" in summary


def test_it_says_when_old_string_is_not_found(tools, copy):
    message = refused(tools, "edit", path="src/app.py", old_string="return 3", new_string="return 4")
    assert "not found" in message and "nothing was written" in message


def test_it_refuses_an_ambiguous_old_string_unless_replace_all(tools, copy):
    (copy / "dup.py").write_text("x = 1\ny = 1\nz = 1\n")
    message = refused(tools, "edit", path="dup.py", old_string="= 1", new_string="= 2")
    assert "found 3 times: add more context or set replace_all" in message
    assert (copy / "dup.py").read_text() == "x = 1\ny = 1\nz = 1\n"
    summary = ok(tools, "edit", path="dup.py", old_string="= 1", new_string="= 2", replace_all=True)
    assert (copy / "dup.py").read_text() == "x = 2\ny = 2\nz = 2\n"
    assert "3 occurrences" in summary


def test_it_counts_overlapping_occurrences_as_ambiguous(tools, copy):
    (copy / "a.txt").write_text("aaa")
    assert "found 2 times" in refused(tools, "edit", path="a.txt", old_string="aa", new_string="b")


@pytest.mark.parametrize(
    "arguments, said",
    [
        ({"old_string": "", "new_string": "x"}, "old_string is empty"),
        ({"old_string": "main", "new_string": "main"}, "are the same"),
        ({"old_string": "main"}, "must both be text"),
        ({"old_string": "main", "new_string": "x", "replace_all": "yes"}, "replace_all must be true or false"),
        ({"old_string": "main", "new_string": "x", "edits": []}, "not both"),
        ({"edits": []}, "non-empty list"),
        ({"edits": "main->x"}, "non-empty list"),
        ({"edits": ["main"]}, "edit 1 must be an object"),
        ({"edits": [{"old_string": "main", "new_string": "x", "path": "y"}]}, "unknown keys: path"),
    ],
)
def test_it_refuses_a_malformed_edit_before_touching_the_file(tools, copy, arguments, said):
    before = (copy / "src" / "app.py").read_bytes()
    assert said in refused(tools, "edit", path="src/app.py", **arguments)
    assert (copy / "src" / "app.py").read_bytes() == before


def test_it_sends_a_missing_file_to_file_write(tools, copy):
    message = refused(tools, "edit", path="new.py", old_string="a", new_string="b")
    assert "no such file 'new.py'" in message and "file_write" in message
    assert not (copy / "new.py").exists()


def test_it_applies_a_list_of_edits_in_order(tools, copy):
    summary = ok(
        tools,
        "edit",
        path="src/app.py",
        edits=[
            {"old_string": "def main", "new_string": "def start"},
            {"old_string": "def start():", "new_string": "def start(argv):"},  # sees the first edit
            {"old_string": "return", "new_string": "return len(argv) +", "replace_all": True},
        ],
    )
    assert (copy / "src" / "app.py").read_text() == "def start(argv):\n    return len(argv) + 1\n"
    assert "3 edits" in summary


def test_it_writes_nothing_when_one_edit_of_a_list_fails(tools, copy):
    before = (copy / "src" / "app.py").read_bytes()
    message = refused(
        tools,
        "edit",
        path="src/app.py",
        edits=[{"old_string": "def main", "new_string": "def start"}, {"old_string": "missing", "new_string": "x"}],
    )
    assert "edit 2 of 2: old_string not found" in message and "nothing was written" in message
    assert (copy / "src" / "app.py").read_bytes() == before


def test_it_keeps_the_files_mode_and_leaves_no_temporary_file(tools, copy):
    script = copy / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o750)
    ok(tools, "edit", path="run.sh", old_string="echo hi", new_string="echo bye")
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert script.read_text() == "#!/bin/sh\necho bye\n"
    assert leftovers(copy) == []


def test_it_refuses_to_edit_a_binary_file(tools, copy):
    (copy / "blob.bin").write_bytes(b"abc\x00def")
    assert "binary file, 7 bytes" in refused(tools, "edit", path="blob.bin", old_string="abc", new_string="x")
    assert (copy / "blob.bin").read_bytes() == b"abc\x00def"


def test_it_refuses_to_edit_a_folder(tools):
    assert "is a folder" in refused(tools, "edit", path="src", old_string="a", new_string="b")


def test_it_matches_newlines_of_a_crlf_file_the_way_file_read_shows_them(tools, copy):
    (copy / "dos.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    ok(tools, "edit", path="dos.txt", old_string="one\ntwo", new_string="1\n2")
    assert (copy / "dos.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_it_edits_through_a_link_inside_the_copy_and_keeps_the_link(tools, copy):
    ok(tools, "edit", path="app-link.py", old_string="return 1", new_string="return 7")
    assert (copy / "app-link.py").is_symlink()
    assert "return 7" in (copy / "src" / "app.py").read_text()


# -- file_write --


def test_it_creates_a_file_and_its_folders(tools, copy):
    summary = ok(tools, "file_write", path="new/deep/notes.md", content="héllo\nworld\n")
    assert (copy / "new" / "deep" / "notes.md").read_text(encoding="utf-8") == "héllo\nworld\n"
    assert "created new/deep/notes.md" in summary and "13 bytes" in summary and "2 lines" in summary


def test_it_gives_a_new_file_the_mode_the_umask_allows(tools, copy):
    mask = os.umask(0o027)
    try:
        ok(tools, "file_write", path="fresh.txt", content="x")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((copy / "fresh.txt").stat().st_mode) == 0o640


def test_it_replaces_a_file_whole_keeping_its_mode(tools, copy):
    (copy / "README.md").chmod(0o600)
    assert "replaced README.md" in ok(tools, "file_write", path="README.md", content="new\n")
    assert (copy / "README.md").read_text() == "new\n"
    assert stat.S_IMODE((copy / "README.md").stat().st_mode) == 0o600
    assert leftovers(copy) == []


def test_it_refuses_to_write_a_folder(tools, copy):
    assert "is a folder" in refused(tools, "file_write", path="src", content="x")
    assert (copy / "src").is_dir()


def test_it_refuses_content_that_is_not_text(tools, copy):
    assert "content must be text" in refused(tools, "file_write", path="x.txt", content=["a"])
    assert "surrogates not allowed" in refused(tools, "file_write", path="x.txt", content="\ud800")
    assert not (copy / "x.txt").exists() and leftovers(copy) == []


def test_it_writes_relative_to_the_working_folder(copy):
    tools = FileTools(copy, start="src")
    assert "created pkg/new.py" in ok(tools, "file_write", path="pkg/new.py", content="")
    assert "created ../top.txt" in ok(tools, "file_write", path="../top.txt", content="")
    assert (copy / "src" / "pkg" / "new.py").exists() and (copy / "top.txt").exists()


# -- grep --


def test_it_greps_path_line_text_in_name_order(tools):
    assert ok(tools, "grep", pattern="hello") == "README.md:2: hello world\nsrc/pkg/util.py:2:     return 'hello'"


def test_it_greps_with_a_python_regex_and_ignore_case(tools):
    assert ok(tools, "grep", pattern=r"^def \w+\(\):$").split("\n") == [
        "app-link.py:1: def main():",  # a link that stays inside is a file of the copy
        "src/app.py:1: def main():",
        "src/pkg/util.py:1: def helper():",
    ]
    assert "no matches" in ok(tools, "grep", pattern="HELLO")
    assert ok(tools, "grep", pattern="HELLO", ignore_case=True).count("\n") == 1


def test_it_says_what_is_wrong_with_a_bad_regex(tools):
    assert "bad regex '(unclosed'" in refused(tools, "grep", pattern="(unclosed")
    assert "non-empty" in refused(tools, "grep", pattern="")


def test_it_greps_only_files_matching_a_glob(tools, copy):
    assert ok(tools, "grep", pattern="hello", glob="*.py") == "src/pkg/util.py:2:     return 'hello'"
    assert ok(tools, "grep", pattern="hello", glob="*.{md,txt}") == "README.md:2: hello world"
    assert ok(tools, "grep", pattern="def", glob="src/*.py") == "src/app.py:1: def main():"


def test_it_greps_one_file_or_one_folder(tools):
    assert ok(tools, "grep", pattern="def", path="src/pkg") == "src/pkg/util.py:1: def helper():"
    assert ok(tools, "grep", pattern="def", path="src/app.py") == "src/app.py:1: def main():"
    assert "no such file or folder" in refused(tools, "grep", pattern="x", path="nowhere")


def test_it_greps_relative_to_the_working_folder(copy):
    tools = FileTools(copy, start="src")
    assert ok(tools, "grep", pattern="hello") == "pkg/util.py:2:     return 'hello'"
    assert ok(tools, "grep", pattern="hello", path="..").split("\n")[0] == "../README.md:2: hello world"


def test_it_skips_git_binary_and_big_files_when_grepping(tools, copy):
    (copy / "blob.bin").write_bytes(b"needle\x00")
    (copy / "big.txt").write_text("needle\n" + "x" * GREP_FILE_CAP)
    (copy / "src" / ".git").write_text("gitdir: needle\n")  # a submodule's .git file
    (copy / ".git" / "needle").write_text("needle\n")
    (copy / "small.txt").write_text("needle\n")
    assert ok(tools, "grep", pattern="needle") == "small.txt:1: needle"
    assert "binary file" in refused(tools, "grep", pattern="needle", path="blob.bin")


def test_it_stops_at_200_matches(tools, copy):
    (copy / "many.txt").write_text("hit\n" * 250)
    lines = ok(tools, "grep", pattern="hit").split("\n")
    assert len(lines) == 201 and lines[-1] == "[... more matches not shown]"
    assert lines[199] == "many.txt:200: hit"
    (copy / "many.txt").write_text("hit\n" * 200)
    assert "more matches" not in ok(tools, "grep", pattern="hit")


def test_it_cuts_a_long_matching_line(tools, copy):
    (copy / "min.js").write_text("x" * 800 + "needle")
    line = ok(tools, "grep", pattern="needle")
    assert line.endswith("… [line cut: 806 characters]") and len(line) < 600


def test_it_does_not_match_a_phantom_line_after_the_last_newline(tools, copy):
    (copy / "one.txt").write_text("a\n")
    assert "no matches" in ok(tools, "grep", pattern="^$", path="one.txt")


# -- glob --


def test_it_globs_at_every_depth_or_at_the_top(tools):
    assert sorted(ok(tools, "glob", pattern="**/*.py").split("\n")) == ["app-link.py", "src/app.py", "src/pkg/util.py"]
    assert ok(tools, "glob", pattern="*.md") == "README.md"
    assert ok(tools, "glob", pattern="src/*.py") == "src/app.py"
    assert sorted(ok(tools, "glob", pattern="src/**").split("\n")) == ["src/app.py", "src/pkg/util.py"]


def test_it_globs_braces_classes_and_question_marks(tools, copy):
    (copy / "a1.txt").write_text("")
    (copy / "b2.txt").write_text("")
    assert sorted(ok(tools, "glob", pattern="*.{md,txt}").split("\n")) == ["README.md", "a1.txt", "b2.txt"]
    assert ok(tools, "glob", pattern="[a]?.txt") == "a1.txt"
    assert ok(tools, "glob", pattern="[!a]?.txt") == "b2.txt"


def test_it_lists_files_newest_first_and_never_folders(tools, copy):
    for age, name in enumerate(["new.txt", "mid.txt", "old.txt"]):
        (copy / name).write_text("")
        os.utime(copy / name, (1_000_000 - age * 1000, 1_000_000 - age * 1000))
    assert ok(tools, "glob", pattern="*.txt") == "new.txt\nmid.txt\nold.txt"
    assert "src" not in ok(tools, "glob", pattern="*").split("\n")


def test_it_lists_at_most_500_files(tools, copy):
    (copy / "many").mkdir()
    for n in range(510):
        (copy / "many" / f"{n}.txt").write_text("")
    lines = ok(tools, "glob", pattern="many/*.txt").split("\n")
    assert len(lines) == 501 and "10 more files not shown" in lines[-1]


def test_it_globs_inside_a_folder_relative_to_the_working_folder(copy):
    tools = FileTools(copy, start="src")
    assert ok(tools, "glob", pattern="*.py") == "app.py"
    assert ok(tools, "glob", pattern="*.py", path="pkg") == "pkg/util.py"
    assert ok(tools, "glob", pattern="*.md", path="..") == "../README.md"


def test_it_says_when_no_file_matches_or_the_pattern_is_wrong(tools):
    assert "no files match '*.rs'" in ok(tools, "glob", pattern="*.rs")
    assert "absolute" in refused(tools, "glob", pattern="/etc/*")
    assert "'..'" in refused(tools, "glob", pattern="../*")
    assert "glob searches a folder" in refused(tools, "glob", pattern="*", path="README.md")
    assert "non-empty" in refused(tools, "glob", pattern="")


def test_it_skips_git_when_globbing(tools):
    assert all(".git" not in line for line in ok(tools, "glob", pattern="**/*").split("\n"))
    assert ok(tools, "glob", pattern="**/config").startswith("no files match")


# -- the ways out --

OUT_PATHS = [
    ("../x", "outside the working copy"),
    ("src/../../x", "outside the working copy"),
    ("/etc/passwd", "outside the working copy"),
    ("etc/passwd", "outside the working copy"),  # etc -> /etc inside the copy
    ("etc", "outside the working copy"),
    ("out-dir/secret.txt", "outside the working copy"),
    ("secret-link", "outside the working copy"),  # a link to a file outside
    ("dangling-out", "outside the working copy"),  # a link to where a file outside would be
    (".git/config", "inside .git"),
    (".GIT/config", "inside .git"),
    ("src/../.git/hooks/pre-commit", "inside .git"),
    ("git-link/config", "inside .git"),
    ("a\x00b", "NUL byte"),
    ("", "non-empty"),
]


@pytest.mark.parametrize("path, said", OUT_PATHS)
@pytest.mark.parametrize(
    "name, arguments",
    [
        ("file_read", {}),
        ("file_write", {"content": "pwned"}),
        ("edit", {"old_string": "core", "new_string": "pwned"}),
        ("grep", {"pattern": "."}),
        ("glob", {"pattern": "*"}),
    ],
)
def test_it_refuses_every_way_out_for_every_tool(tools, outside, path, said, name, arguments):
    message = refused(tools, name, path=path, **arguments)
    assert said in message
    if said != "NUL byte" and path:
        assert repr(path) in message, "the message names the path as the model gave it"
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"
    assert not (outside / "not-yet.txt").exists()


def test_it_refuses_an_absolute_path_into_the_copys_git(tools, copy):
    message = refused(tools, "file_write", path=str(copy / ".git" / "config"), content="x")
    assert "inside .git" in message
    assert SECRET in (copy / ".git" / "config").read_text()


def test_it_refuses_a_symlink_loop_without_crashing(tools, copy):
    (copy / "loop-a").symlink_to(copy / "loop-b")
    (copy / "loop-b").symlink_to(copy / "loop-a")
    assert tools.call("file_read", {"path": "loop-a"}).is_error
    assert tools.call("file_write", {"path": "loop-a", "content": "x"}).is_error


def test_it_never_walks_out_of_the_copy_or_into_git(tools, copy):
    assert "no matches" in ok(tools, "grep", pattern=SECRET)
    assert "no matches" in ok(tools, "grep", pattern="root:")  # /etc/passwd through the etc link
    listed = ok(tools, "glob", pattern="**/*").split("\n")
    assert not {"secret-link", "dangling-out"} & set(listed)
    assert not [line for line in listed if line.startswith(("etc/", "out-dir/", "git-link/", ".git/"))]
    assert "app-link.py" in listed  # a link that stays inside is listed


def test_it_resolves_only_inside_the_copy(tools, copy):
    assert tools.resolve("src/../README.md") == copy.resolve() / "README.md"
    assert tools.resolve(".") == copy.resolve()
    for path, _said in OUT_PATHS:
        with pytest.raises(ToolRefused):
            tools.resolve(path)
    with pytest.raises(ToolRefused):
        tools.resolve(None)


# -- properties --

TEXT = st.text(alphabet=st.characters(blacklist_characters="\x00\x01", blacklist_categories=("Cs",)), max_size=200)
SMALL = st.text(alphabet="ab\n ", max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=SMALL,
    good=st.lists(st.tuples(SMALL, SMALL, st.booleans()), max_size=4),
    where=st.integers(min_value=0, max_value=4),
)
def test_it_leaves_the_file_byte_identical_when_any_edit_of_a_list_fails(tools, copy, text, good, where):
    target = copy / "prop.txt"
    target.write_bytes(text.encode())
    edits = [{"old_string": old, "new_string": new, "replace_all": every} for old, new, every in good]
    edits.insert(min(where, len(edits)), {"old_string": "\x01 never in the file", "new_string": "x"})
    assert tools.call("edit", {"path": "prop.txt", "edits": edits}).is_error
    assert target.read_bytes() == text.encode()
    assert leftovers(copy) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT, cut=st.tuples(st.integers(0, 200), st.integers(1, 30)), new=TEXT)
def test_it_edits_a_unique_string_exactly_like_str_replace_once(tools, copy, text, cut, new):
    start = min(cut[0], len(text))
    old = text[start : start + cut[1]]
    assume(old and old != new and text.find(old) == text.rfind(old))
    (copy / "prop.txt").write_bytes(text.encode())
    ok(tools, "edit", path="prop.txt", old_string=old, new_string=new)
    expected = text.replace(old, new, 1)
    assert (copy / "prop.txt").read_bytes().decode() == expected
    if expected and "\r" not in expected:  # file_read shows it back, line numbers aside
        shown = [line.split("\t", 1)[1] for line in ok(tools, "file_read", path="prop.txt").split("\n")]
        assert "\n".join(shown) == expected.removesuffix("\n")


SEGMENTS = st.sampled_from(
    ["..", ".", "a", "", "src", "etc", "out-dir", "secret-link", "app-link.py", "git-link", ".git", "loop", "x"]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=7), absolute=st.sampled_from(["", "/", "root"]))
def test_it_never_resolves_a_path_outside_the_copy(tools, copy, parts, absolute):
    if not (copy / "loop").is_symlink():
        (copy / "loop").symlink_to(copy / "loop")
    name = "/".join(parts)
    if absolute == "/":
        name = "/" + name
    elif absolute == "root":
        name = f"{copy}/{name}"
    try:
        target = tools.resolve(name)
    except ToolRefused:
        return
    root = copy.resolve()
    assert target == root or root in target.parents
    assert ".git" not in target.relative_to(root).parts
    assert os.path.realpath(target) == str(target)  # no link left to follow somewhere else


def test_it_refuses_a_path_a_symlink_loop_leaves_half_resolved(tools, copy):
    """`loop/../etc/passwd` with `loop` a link to itself and `etc` a link out: resolution stops at
    the loop and would leave `etc` unfollowed; reading it must not reach /etc/passwd."""
    (copy / "loop").symlink_to(copy / "loop")
    assert os.path.realpath(copy / "etc") == "/etc"  # the fixture's link out
    result = tools.call("file_read", {"path": "loop/../etc/passwd"})
    assert result.is_error and "root:" not in result.content
    assert tools.call("grep", {"pattern": "root", "path": "loop/../etc"}).is_error
