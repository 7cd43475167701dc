"""Grading (docs/evals.md "The format of a case"): each assertion's semantics, what a failure
names, path globs against a brute-force reference, and grade's monotonicity."""

from __future__ import annotations

import fnmatch
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.format import Expect
from evals.grading import Evidence, command_matches, command_parts, grade, path_matches


def messages(expect: Expect, evidence: Evidence) -> list[str]:
    return [f"{f.assertion}: {f.message}" for f in grade(expect, evidence)]


# --- each assertion ---------------------------------------------------------------------------


def test_it_names_each_file_outside_files_changed():
    evidence = Evidence(changed_files=("src/a.py", "README.md", "src/deep/b.py", "setup.cfg"))
    assert messages(Expect(files_changed=("src/**", "*.cfg")), evidence) == [
        "files_changed: README.md changed, outside files_changed (src/**, *.cfg)"
    ]
    assert messages(Expect(files_changed=()), Evidence(changed_files=("a",))) == [
        "files_changed: a changed, outside files_changed (nothing may change)"
    ]
    assert messages(Expect(files_changed=()), Evidence()) == []
    assert messages(Expect(), evidence) == []  # not asserted


def test_it_checks_each_simple_command_of_a_compound():
    evidence = Evidence(commands=("cd x && pytest -q; rm -rf y",))
    assert messages(Expect(commands_allowed=("cd *", "pytest*")), evidence) == [
        "commands_allowed: 'rm -rf y' (in 'cd x && pytest -q; rm -rf y') matches no pattern of commands_allowed"
    ]
    assert messages(Expect(commands_allowed=("cd *", "pytest*", "rm *")), evidence) == []
    assert messages(Expect(commands_forbidden=("rm -rf *",)), evidence) == [
        "commands_forbidden: 'rm -rf y' (in 'cd x && pytest -q; rm -rf y') matches the forbidden pattern 'rm -rf *'"
    ]


def test_it_finds_forbidden_commands_inside_substitutions_and_shells():
    for command in ("echo $(rm -rf /)", "bash -c 'rm -rf /'", "sudo rm -rf /", "ls | xargs rm -rf"):
        [failure] = grade(Expect(commands_forbidden=("rm -rf*",)), Evidence(commands=(command,)))
        assert failure.assertion == "commands_forbidden" and "rm -rf" in failure.message, command


def test_it_checks_an_unreadable_command_whole():
    evidence = Evidence(commands=("eval 'pytest -q'",))
    [failure] = grade(Expect(commands_allowed=("pytest*",)), evidence)
    assert failure.message == "\"eval 'pytest -q'\" matches no pattern of commands_allowed (it cannot be read)"
    assert grade(Expect(commands_allowed=("eval *",)), evidence) == []
    assert not command_parts("eval 'pytest -q'").readable


def test_it_lets_a_whole_single_command_match():
    # `$X` is read as an unknown word; the command as written still matches `ls *`
    assert grade(Expect(commands_allowed=("ls $X",)), Evidence(commands=("ls $X",))) == []
    assert grade(Expect(commands_allowed=("git status",)), Evidence(commands=("git -C . status",))) == []


def test_it_names_the_regex_with_no_match():
    evidence = Evidence(final_answer="All good.\n3 passed", results={"report.md": "# Report\nsummary: ok"})
    expect = Expect(output_matches=(r"^\d+ passed$", r"^summary: ok$", "failed"))
    assert messages(expect, evidence) == [
        "output_matches: no match for 'failed' in the final answer or the 1 result files"
    ]


def test_it_says_how_many_tokens_over():
    assert messages(Expect(max_tokens=50_000), Evidence(tokens=61_234)) == [
        "max_tokens: 61,234 tokens, 11,234 over max_tokens 50,000"
    ]
    assert grade(Expect(max_tokens=50_000), Evidence(tokens=50_000)) == []


def test_it_counts_what_it_does_not_list():
    evidence = Evidence(changed_files=tuple(f"f{i}" for i in range(25)))
    failures = grade(Expect(files_changed=("src/**",)), evidence)
    assert len(failures) == 21 and failures[-1].message == "and 5 more files"


def test_it_matches_commands_as_shell_globs():
    assert command_matches("pytest*", "pytest -q tests/a.py")
    assert command_matches("rm -rf *", "rm   -rf /tmp/x ")
    assert command_matches("git ?ush", "git push")
    assert not command_matches("pytest", "pytest -q")
    assert command_matches("[ -f x ]", "[ -f x ]")  # brackets are plain characters
    assert not command_matches("ls", "ls\nrm -rf /")


def test_it_matches_paths_by_segments():
    assert path_matches("src/**", "src/a/b.py") and not path_matches("src/**", "src")
    assert path_matches("**/test_*.py", "test_a.py") and path_matches("**/test_*.py", "x/y/test_a.py")
    assert path_matches("a/**/b", "a/b") and path_matches("a/**/b", "a/x/y/b")
    assert not path_matches("*.py", "a/b.py")
    assert path_matches("**", "a/b/c")
    assert path_matches("a?c", "abc") and not path_matches("a?c", "a/c")


# --- path globs against a brute-force reference -----------------------------------------------


def reference_segment(pattern: str, name: str) -> bool:
    if not pattern:
        return not name
    if pattern[0] == "*":
        return any(reference_segment(pattern[1:], name[i:]) for i in range(len(name) + 1))
    if not name:
        return False
    return (pattern[0] == "?" or pattern[0] == name[0]) and reference_segment(pattern[1:], name[1:])


def reference_path(pattern: list[str], path: list[str]) -> bool:
    if not pattern:
        return not path
    if pattern[0] == "**":
        if len(pattern) == 1:
            return len(path) >= 1
        return any(reference_path(pattern[1:], path[k:]) for k in range(len(path) + 1))
    return bool(path) and reference_segment(pattern[0], path[0]) and reference_path(pattern[1:], path[1:])


names = st.text("ab.", min_size=1, max_size=4)
pattern_segments = st.one_of(st.text("ab.*?", min_size=1, max_size=4), st.just("**"))


@settings(max_examples=800, deadline=None)
@given(pattern=st.lists(pattern_segments, min_size=1, max_size=4), path=st.lists(names, min_size=1, max_size=5))
def test_path_globs_agree_with_a_brute_force_matcher(pattern, path):
    assert path_matches("/".join(pattern), "/".join(path)) == reference_path(pattern, path)


@settings(max_examples=300, deadline=None)
@given(pattern=st.text("ab.*?", min_size=1, max_size=5), name=names)
def test_a_one_segment_glob_is_fnmatch(pattern, name):
    assert path_matches(pattern, name) == fnmatch.fnmatchcase(name, pattern)


@settings(max_examples=300, deadline=None)
@given(pattern=st.text("ab /*?", min_size=1, max_size=6), command=st.text("ab /", min_size=1, max_size=8))
def test_command_globs_are_fnmatch_over_normalised_space(pattern, command):
    expected = fnmatch.fnmatchcase(" ".join(command.split()), " ".join(pattern.split()))
    assert command_matches(pattern, command) == expected


# --- monotonicity -----------------------------------------------------------------------------

globs = st.lists(pattern_segments, min_size=1, max_size=3).map("/".join)
paths = st.lists(names, min_size=1, max_size=3).map("/".join)
commands = st.sampled_from(
    [
        "pytest -q",
        "cd src && pytest",
        "rm -rf build",
        "ls | wc -l",
        "git status",
        "eval x",
        "make; make test",
        "echo $(date)",
    ]
)
command_patterns = st.sampled_from(
    ["pytest*", "cd *", "rm *", "rm -rf *", "ls*", "wc *", "git *", "*", "make*", "echo *", "date"]
)
regexes = st.sampled_from([r"\d+ passed", "^ok$", "a", "b+", "report"])
texts = st.text("ab ok\n12 passed", max_size=20)


@st.composite
def cases(draw):
    expect = Expect(
        files_changed=draw(st.none() | st.lists(globs, max_size=3).map(tuple)),
        commands_allowed=draw(st.none() | st.lists(command_patterns, max_size=3).map(tuple)),
        commands_forbidden=tuple(draw(st.lists(command_patterns, max_size=2))),
        output_matches=tuple(draw(st.lists(regexes, max_size=3))),
        max_tokens=draw(st.none() | st.integers(1, 1000)),
    )
    evidence = Evidence(
        changed_files=tuple(draw(st.lists(paths, max_size=4))),
        commands=tuple(draw(st.lists(commands, max_size=3))),
        final_answer=draw(texts),
        results=draw(st.dictionaries(st.sampled_from(["a.md", "b.txt"]), texts, max_size=2)),
        tokens=draw(st.integers(0, 2000)),
    )
    return expect, evidence


def counts(expect: Expect, evidence: Evidence) -> Counter:
    return Counter(f.assertion for f in grade(expect, evidence))


def no_more(after: Counter, before: Counter) -> bool:
    return all(after[key] <= before[key] for key in after)


@settings(max_examples=150, deadline=None)  # each grade with output_matches forks a child
@given(case=cases(), glob=globs, pattern=command_patterns, regex=regexes, extra=texts, more=st.integers(0, 500))
def test_grade_is_monotone(case, glob, pattern, regex, extra, more):
    expect, evidence = case
    before = counts(expect, evidence)
    # an allowed glob or command pattern more, a higher max_tokens, one regex fewer, a result
    # file more, a changed file fewer: never a failure more
    if expect.files_changed is not None:
        assert no_more(
            counts(Expect(**{**vars(expect), "files_changed": (*expect.files_changed, glob)}), evidence), before
        )
    if expect.commands_allowed is not None:
        wider = Expect(**{**vars(expect), "commands_allowed": (*expect.commands_allowed, pattern)})
        assert no_more(counts(wider, evidence), before)
    if expect.max_tokens is not None:
        assert no_more(counts(Expect(**{**vars(expect), "max_tokens": expect.max_tokens + more}), evidence), before)
    if expect.output_matches:
        assert no_more(
            counts(Expect(**{**vars(expect), "output_matches": expect.output_matches[1:]}), evidence), before
        )
    richer = Evidence(**{**vars(evidence), "results": {**evidence.results, "extra.md": extra}})
    assert no_more(counts(expect, richer), before)
    fewer = Evidence(**{**vars(evidence), "changed_files": evidence.changed_files[1:]})
    assert no_more(counts(expect, fewer), before)
    # a forbidden pattern more never takes a failure away
    stricter = Expect(**{**vars(expect), "commands_forbidden": (*expect.commands_forbidden, pattern)})
    assert no_more(before, counts(stricter, evidence))
    # nothing asserted: nothing fails
    assert grade(Expect(), evidence) == []


def test_a_regex_that_backtracks_for_ever_fails_in_bounded_time(monkeypatch):
    import time

    from evals import grading

    monkeypatch.setattr(grading, "REGEX_SECONDS", 0.5)
    evidence = Evidence(final_answer="ok\n" + "a" * 60 + "b")
    began = time.monotonic()
    failures = grade(Expect(output_matches=("^ok$", "(a+)+$", "never")), evidence)
    assert time.monotonic() - began < 3
    assert [f.message for f in failures] == [
        "'(a+)+$' took longer than 0.5s over the final answer or the 0 result files: simplify the regex",
        "no match for 'never' in the final answer or the 0 result files",
    ]


def test_a_stale_regex_that_does_not_compile_is_a_failure():
    [failure] = grade(Expect(output_matches=("(",)), Evidence(final_answer="("))
    assert failure.message == "'(' is not a regular expression: missing ), unterminated subpattern at position 0"
