"""The case format (docs/evals.md "The format of a case"): valid cases round-trip, every fault
lands as an error at its file and line, nothing raises."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evals.format import (
    EXPECT_KEYS,
    Case,
    Expect,
    cases_folder,
    check_args,
    files_digest,
    parse_expect,
    parse_task,
    read_cases,
)

FOLDER = ".rysh/automations/codes/fix-the-test/evals"

# --- strategies -----------------------------------------------------------------------------

segment = st.text("abcxyz_-.", min_size=1, max_size=6).filter(lambda s: s not in (".", ".."))
glob_segment = st.one_of(segment, st.just("*"), st.just("**"), st.builds(lambda a: a + "*.py", segment))
globs = st.lists(glob_segment, min_size=1, max_size=4).map("/".join)
words = st.text("abcdefghij -_./*?=", min_size=1, max_size=20).filter(lambda s: s.strip())
regexes = st.sampled_from([r"\bok\b", r"^PASSED", r"tests? passed", r"[0-9]+ failed", r"done\.$", "x"])
text_values = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=30)
arg_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
tasks = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=60
).filter(lambda s: s.strip() and not s.strip().startswith("---"))


@st.composite
def expects(draw) -> Expect:
    return Expect(
        files_changed=draw(st.none() | st.lists(globs, max_size=3).map(tuple)),
        commands_allowed=draw(st.none() | st.lists(words, max_size=3).map(tuple)),
        commands_forbidden=tuple(draw(st.lists(words, max_size=3))),
        output_matches=tuple(draw(st.lists(regexes, max_size=3))),
        max_tokens=draw(st.none() | st.integers(1, 10**9)),
    )


def expect_yaml(expect: Expect) -> str:
    # JSON is YAML: every string quoted, so what was generated is what is read
    lines = []
    for key in EXPECT_KEYS:
        value = getattr(expect, key)
        if value is None or (value == () and key in ("commands_forbidden", "output_matches")):
            continue
        lines.append(f"{key}: {json.dumps(list(value) if isinstance(value, tuple) else value)}")
    return "\n".join(lines) + "\n"


def task_md(body: str, until: str | None, args: dict[str, str]) -> str:
    front = []
    if until is not None:
        front.append(f"until: {json.dumps(until, ensure_ascii=False)}")
    if args:
        front.append("args:")
        front += [f"  {name}: {json.dumps(value, ensure_ascii=False)}" for name, value in args.items()]
    if not front:
        return body
    return "---\n" + "\n".join(front) + "\n---\n" + body


# --- round trips ----------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    expect=expects(),
    body=tasks,
    until=st.none() | text_values.filter(lambda s: s.strip() == s and s),
    args=st.dictionaries(arg_names, text_values, max_size=3),
    rubric=st.none() | tasks,
    files=st.dictionaries(st.lists(segment, min_size=1, max_size=3).map("/".join), st.binary(max_size=20), max_size=3),
)
def test_it_round_trips_every_valid_case(expect, body, until, args, rubric, files):
    tree = {
        f"{FOLDER}/c1/task.md": task_md(body, until, args).encode(),
        f"{FOLDER}/c1/expect.yaml": expect_yaml(expect).encode(),
    }
    if rubric is not None:
        tree[f"{FOLDER}/c1/judge.md"] = rubric.encode()
    tree.update({f"{FOLDER}/c1/files/{path}": data for path, data in files.items()})
    [case] = read_cases(tree, FOLDER)
    assert case.errors == ()
    assert (case.name, case.folder) == ("c1", f"{FOLDER}/c1")
    assert case.task == body.strip()
    assert case.until == until
    assert dict(case.args) == args
    assert case.expect == expect
    assert case.rubric == (rubric.strip() if rubric is not None else None)
    # a file tree whose paths clash (a/b and a/b/c) cannot exist on disk, but reads the same
    assert dict(case.files) == files


# --- faults ---------------------------------------------------------------------------------

GOOD_EXPECT = [
    "files_changed:",
    "  - src/**",
    "  - tests/test_*.py",
    "commands_allowed: ['pytest*', 'cd *']",
    "commands_forbidden:",
    "  - rm -rf *",
    "output_matches:",
    "  - '\\d+ passed'",
    "max_tokens: 50000",
]

EXPECT_FAULTS = [
    # (line index to replace, replacement, field, words in the message)
    (1, "  - /src/**", "files_changed", "leading /"),
    (1, "  - src/../x", "files_changed", ".."),
    (1, "  - src/", "files_changed", "dir/**"),
    (1, "  - src//x", "files_changed", "empty segment"),
    (1, "  - ''", "files_changed", "empty glob"),
    (1, '  - "a\\0b"', "files_changed", "NUL"),
    (1, "  - ./src", "files_changed", ". segment"),
    (1, "  - [a, b]", "files_changed", "as a text"),
    (7, "  - '(unclosed'", "output_matches", "not a regular expression"),
    (7, "  - '[z-a]'", "output_matches", "bad character range"),
    (8, "max_tokens: 0", "max_tokens", "at least 1"),
    (8, "max_tokens: -3", "max_tokens", "at least 1"),
    (8, "max_tokens: lots", "max_tokens", "whole number"),
    (8, "max_tokens: true", "max_tokens", "whole number"),
    (8, "max_token: 5", "max_token", "files_changed, commands_allowed, commands_forbidden, output_matches, max_tokens"),
    (3, "commands_allowed: pytest", "commands_allowed", "a list of command patterns"),
    (5, "  - '   '", "commands_forbidden", "empty pattern"),
    (0, "files_changed: src/**", "files_changed", "a list of path globs"),
    (3, "commands_alowed: []", "commands_alowed", "did you mean 'commands_allowed'"),
]


@pytest.mark.parametrize("index, line, field, words", EXPECT_FAULTS)
def test_it_names_each_expect_fault_at_its_line(index, line, field, words):
    lines = list(GOOD_EXPECT)
    lines[index] = line
    expect, errors = parse_expect("\n".join(lines) + "\n", path="x/expect.yaml")
    assert len(errors) == 1, errors
    [error] = errors
    assert (error.path, error.line, error.field) == ("x/expect.yaml", index + 1, field)
    assert words in error.message
    assert expect == Expect()  # a case with a fault does not run


def test_it_reads_the_good_expect():
    expect, errors = parse_expect("\n".join(GOOD_EXPECT), path="x/expect.yaml")
    assert errors == []
    assert expect == Expect(
        files_changed=("src/**", "tests/test_*.py"),
        commands_allowed=("pytest*", "cd *"),
        commands_forbidden=("rm -rf *",),
        output_matches=(r"\d+ passed",),
        max_tokens=50000,
    )


def test_it_tells_empty_lists_from_absent_assertions():
    expect, errors = parse_expect("files_changed: []\ncommands_allowed: []\n", path="e.yaml")
    assert errors == [] and expect.files_changed == () and expect.commands_allowed == ()
    assert parse_expect("", path="e.yaml") == (Expect(), [])


def test_it_refuses_expect_that_is_not_a_mapping():
    _, [error] = parse_expect("- a\n- b\n", path="e.yaml")
    assert (error.line, error.field) == (1, "") and "mapping" in error.message


@settings(max_examples=200, deadline=None)
@given(index=st.integers(0, len(GOOD_EXPECT)), junk=st.text(max_size=40))
def test_it_never_raises_on_an_injected_line(index, junk):
    lines = list(GOOD_EXPECT)
    lines.insert(index, junk)
    expect, errors = parse_expect("\n".join(lines), path="e.yaml")
    for error in errors:
        assert error.path == "e.yaml" and 0 <= error.line <= len(lines) + 1


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_it_never_raises_on_any_text(text):
    parse_expect(text, path="e.yaml")
    parse_task(text, path="t.md")


TASK_FAULTS = [
    ("---\nuntil: done\nuntill: x\n---\nDo it.\n", 3, "untill", "did you mean 'until'"),
    ("---\nuntil: ''\n---\nDo it.\n", 2, "until", "non-empty text"),
    ("---\nuntil: [a]\n---\nDo it.\n", 2, "until", "non-empty text"),
    ("---\nargs: [a, b]\n---\nDo it.\n", 2, "args", "a mapping"),
    ("---\nargs:\n  name:\n---\nDo it.\n", 3, "args.name", "a value"),
    ("---\nargs:\n  name: [1]\n---\nDo it.\n", 3, "args.name", "a value"),
    ("---\nargs:\n  2x: a\n---\nDo it.\n", 3, "args", "argument name"),
    ("---\nargs:\n  a: 1\n  a: 2\n---\nDo it.\n", 4, "args.a", "already set on line 3"),
    ("---\nuntil: done\n---\n\n   \n", 4, "task", "is empty"),
    ("", 1, "task", "is empty"),
    ("---\nuntil: done\nDo it.\n", 1, "", "never closed"),
    ("---\nuntil: [done\n---\nDo it.\n", 2, "until", "invalid YAML"),
]


@pytest.mark.parametrize("text, line, field, words", TASK_FAULTS)
def test_it_names_each_task_fault_at_its_line(text, line, field, words):
    _, _, _, errors = parse_task(text, path="c/task.md")
    assert len(errors) == 1, errors
    [error] = errors
    assert (error.path, error.line, error.field) == ("c/task.md", line, field)
    assert words in error.message


def test_it_reads_args_as_written():
    body, until, args, errors = parse_task("---\nargs:\n  n: 007\n  flag: true\n  empty: ''\n---\nGo\n", path="t.md")
    assert (body, until, errors) == ("Go", None, [])
    assert args == {"n": "007", "flag": "true", "empty": ""}


def test_it_reads_a_task_without_front_matter():
    assert parse_task("\ufeffJust do it.\r\n", path="t.md") == ("Just do it.", None, {}, [])


# --- whole cases ----------------------------------------------------------------------------


def test_it_lists_broken_cases_and_never_skips_them():
    tree = {
        f"{FOLDER}/README.md": b"notes beside the cases",
        f"{FOLDER}/no-expect/task.md": b"Do it.",
        f"{FOLDER}/no-task/expect.yaml": b"max_tokens: 10\n",
        f"{FOLDER}/only-files/files/a.py": b"x",
        f"{FOLDER}/empty-judge/task.md": b"Do it.",
        f"{FOLDER}/empty-judge/expect.yaml": b"",
        f"{FOLDER}/empty-judge/judge.md": b" \n\t\n",
        f"{FOLDER}/latin1/task.md": "caf\u00e9".encode("latin-1"),
        f"{FOLDER}/latin1/expect.yaml": b"",
        f"{FOLDER}/good/task.md": b"Do it.",
        f"{FOLDER}/good/expect.yaml": b"",
        "elsewhere/evals/x/task.md": b"not this recipe's",
    }
    cases = {case.name: case for case in read_cases(tree, FOLDER)}
    assert list(cases) == ["empty-judge", "good", "latin1", "no-expect", "no-task", "only-files"]
    assert not cases["good"].broken
    assert [str(e) for e in cases["no-expect"].errors] == [
        f"{FOLDER}/no-expect/expect.yaml: missing: every case needs a task.md (the task) "
        "and an expect.yaml (the assertions)"
    ]
    assert [e.path for e in cases["no-task"].errors] == [f"{FOLDER}/no-task/task.md"]
    assert len(cases["only-files"].errors) == 2
    assert [str(e) for e in cases["empty-judge"].errors] == [
        f"{FOLDER}/empty-judge/judge.md: judge.md is empty: delete it or write a rubric"
    ]
    [error] = cases["latin1"].errors
    assert error.path.endswith("latin1/task.md") and "not UTF-8" in error.message


def test_it_digests_the_case_files_stably():
    files = {"task.md": b"a", "expect.yaml": b"b", "files/x": b"c"}
    assert files_digest(files) == files_digest(dict(reversed(files.items())))
    assert files_digest(files) != files_digest({**files, "files/x": b"d"})
    # the path is part of it: moving bytes from one file to another is another case
    assert files_digest({"ab": b"c"}) != files_digest({"a": b"bc"})
    [case] = read_cases({f"{FOLDER}/c/{k}": v for k, v in files.items()}, FOLDER)
    assert case.digest == files_digest(files)


def test_it_puts_cases_beside_the_recipe():
    assert cases_folder(".rysh/automations/codes/fix-the-test.md") == ".rysh/automations/codes/fix-the-test/evals"
    assert cases_folder("codes/fix-the-test.md") == "codes/fix-the-test/evals"
    with pytest.raises(ValueError):
        cases_folder("codes/fix-the-test.txt")


def test_it_checks_args_against_the_recipe():
    case = Case(name="c", folder="f/c", args={"repo": "x", "colour": "red"})
    errors = check_args(case, ["repo", "branch"], recipe="codes/fix")
    assert [str(e) for e in errors] == [
        "f/c/task.md: args.colour: codes/fix has no argument 'colour' (its arguments: repo, branch)",
        "f/c/task.md: args: no value for codes/fix's argument 'branch': add `branch: …` under args:",
    ]
    assert check_args(Case(name="c", folder="f/c"), [], recipe="codes/fix") == []
    [error] = check_args(Case(name="c", folder="f/c", args={"a": "1"}), [], recipe="codes/fix")
    assert "(its arguments: none)" in error.message


# --- injected faults, generated ------------------------------------------------------------

BAD_ITEMS = {
    "files_changed": ["/abs/**", "a/../b", "dir/", "a//b", "''", "./x"],
    "output_matches": ["'('", "'[z-a]'", "'a{2,1}'", "'(?P<x>a)(?P<x>b)'", "'*'"],
    "commands_allowed": ["''", "'  '"],
    "commands_forbidden": ["''", "' '"],
}


@st.composite
def expect_with_a_fault(draw):
    """A block-style expect.yaml with one faulty item or key at a known line: (text, line, field)."""
    lines: list[str] = []
    slots: list[tuple[int, str]] = []  # (line index, field) where an item sits
    keys = draw(st.permutations(["files_changed", "commands_allowed", "commands_forbidden", "output_matches"]))
    for key in keys:
        lines.append(f"{key}:")
        for _ in range(draw(st.integers(1, 3))):
            slots.append((len(lines), key))
            lines.append(
                "  - " + json.dumps(draw(st.sampled_from(["src/**", "x"] if key == "files_changed" else ["ok"])))
            )
    kind = draw(st.sampled_from(["item", "key", "max_tokens"]))
    if kind == "item":
        index, key = draw(st.sampled_from(slots))
        lines[index] = "  - " + draw(st.sampled_from(BAD_ITEMS[key]))
        return "\n".join(lines) + "\n", index + 1, key
    index = draw(st.integers(0, len(lines)))
    while index < len(lines) and lines[index].startswith("  - "):
        index += 1  # between two keys, not inside a list
    if kind == "key":
        key = draw(st.from_regex(r"[a-z_]{3,12}", fullmatch=True).filter(lambda k: k not in EXPECT_KEYS))
        lines.insert(index, f"{key}: 1")
        return "\n".join(lines) + "\n", index + 1, key
    lines.insert(index, "max_tokens: " + draw(st.sampled_from(["0", "-1", "1.5", "lots", "true", "[]"])))
    return "\n".join(lines) + "\n", index + 1, "max_tokens"


@settings(max_examples=300, deadline=None)
@given(fault=expect_with_a_fault())
def test_every_injected_expect_fault_lands_at_its_line(fault):
    text, line, field = fault
    expect, errors = parse_expect(text, path="c/expect.yaml")
    assert expect == Expect()
    assert [(e.path, e.line, e.field) for e in errors] == [("c/expect.yaml", line, field)], text


@settings(max_examples=200, deadline=None)
@given(
    until=st.booleans(),
    names=st.lists(arg_names, min_size=1, max_size=3, unique=True),
    key=st.from_regex(r"[a-z_]{3,10}", fullmatch=True).filter(lambda k: k not in ("until", "args")),
    at=st.integers(0, 10),
)
def test_every_injected_task_fault_lands_at_its_line(until, names, key, at):
    front = (["until: done"] if until else []) + ["args:"] + [f"  {name}: v" for name in names]
    at = min(at, len(front))
    while at < len(front) and front[at].startswith("  "):
        at += 1
    front.insert(at, f"{key}: x")
    text = "---\n" + "\n".join(front) + "\n---\nThe task.\n"
    body, _, args, errors = parse_task(text, path="c/task.md")
    assert [(e.path, e.line, e.field) for e in errors] == [("c/task.md", at + 2, key)]
    assert body == "The task." and set(args) == set(names)


def test_a_version_is_the_case_with_the_recipe_it_ran():
    from evals.format import version_digest

    [case] = read_cases({f"{FOLDER}/c/task.md": b"Do it.", f"{FOLDER}/c/expect.yaml": b""}, FOLDER)
    assert version_digest(case, "recipe v1") == version_digest(case, "recipe v1")
    assert version_digest(case, "recipe v1") != version_digest(case, "recipe v2")
    assert len(version_digest(case, "")) == 64
