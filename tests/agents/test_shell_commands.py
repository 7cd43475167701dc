"""The command-line reader behind the approval patterns of commands (agents/shell_commands.py):
each simple command reduced to the program it runs and its words, and what cannot be reduced
said, with why. Pure: no database, no shell run."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.shell_commands import WILD, could_be, pattern_words, read_command_line


def commands(line: str) -> list[tuple]:
    reading = read_command_line(line)
    assert reading.unreadable == [], reading.unreadable
    return reading.commands


def why(line: str) -> str:
    reading = read_command_line(line)
    assert reading.unreadable, (line, reading.commands)
    return " | ".join(reading.unreadable)


@pytest.mark.parametrize(
    "line, reduced",
    [
        ("git  push", ("git", "push")),
        ("'git' \"push\"", ("git", "push")),
        ("g\\it pu\\sh", ("git", "push")),
        ("$'\\x67it' push", ("git", "push")),
        ("/usr/local/bin/git push", ("git", "push")),
        ("git -C sub -c user.email=a@b --no-pager --git-dir=.git --work-tree . push -f", ("git", "push", "-f")),
        ("env -i -u HOME LANG=C git push", ("git", "push")),
        ("timeout -k 1 --signal=KILL 5 git push", ("git", "push")),
        ("nice -n 5 ionice -c2 stdbuf -oL setsid -w nohup git push", ("git", "push")),
        ("sudo -u root -E HOME=/x git push", ("git", "push")),
        ("time -p command -p exec -a x git push", ("git", "push")),
        ("env -S 'git push' origin", ("git", "push", "origin")),
        ("sudo -s git push", ("git", "push")),
        ("watch -n 1 git push", ("git", "push")),
        ("echo x | xargs -0 git push", ("git", "push", WILD)),
        ("echo x | xargs -I{} git {}", ("git", WILD)),
        ("find . -name '*.orig' -exec rm -f {} +", ("rm", "-f", WILD)),
        ("bash -e -o pipefail -c 'cd x && git push'", ("git", "push")),
        ("git $BRANCH", ("git", WILD)),
        ("git pu*", ("git", WILD)),
        ("git {push,pull}", ("git", WILD)),
    ],
)
def test_it_reduces_a_simple_command_to_what_it_runs(line, reduced):
    assert reduced in commands(line)


def test_it_reads_every_command_of_lists_pipelines_compounds_and_substitutions():
    line = (
        "cd a && { make; } || (npm test) | tee log; if [ -f x ]; then echo $(git log) <(ls); fi; "
        "for f in a; do cat $f; done; case x in x) pwd;; esac; while false; do :; done"
    )
    found = {words[0] for words in commands(line)}
    assert {"cd", "make", "npm", "tee", "echo", "git", "ls", "cat", "pwd", "false", ":"} <= found


@pytest.mark.parametrize(
    "line, reason",
    [
        ("eval 'git push'", "eval runs text as commands"),
        ("source x.sh", "source runs a file's commands"),
        ("$CMD push", "the command's name is an expansion"),
        ('"$@"', "the command's name is an expansion"),
        ("alias g=git", "an alias defined inline"),
        ("g() { :; }", "a function defined inline"),
        ("echo 'git push' | bash", "a shell reading commands from its input"),
        ("sh script.sh", "a shell running a script file"),
        ('bash -c "$X"', "the script given to -c is an expansion"),
        ("git -c alias.p=push p", "a setting that can make git run another program"),
        ("git -c core.pager=less log", "a setting that can make git run another program"),
        ("git --frobnicate push", "git has no global option --frobnicate known here"),
        ("timeout --frobnicate 5 git push", "timeout has no option --frobnicate known here"),
        ("env -Z git push", "env has no option -Z known here"),
        ("PS4='$(git push)' bash -xc true", "setting PS4"),
        ("GIT_CONFIG_PARAMETERS=x git status", "setting GIT_CONFIG_PARAMETERS"),
        ("export BASH_ENV=x.sh", "setting BASH_ENV"),
        ("declare -i n=x", "an integer variable evaluates arithmetic"),
        ("unset 'a[$(git push)]'", "a declared or unset name the shell evaluates"),
        ("printf -v 'a[$(git push)]' x", "printf evaluates a name"),
        ("echo ${x@P}", "runs the commands in a variable's value"),
        ("echo $((n + 1))", "arithmetic over variables"),
        ("[[ $n -gt 1 ]]", "arithmetic over variables"),
        ("mapfile -C 'git push' -c 1 a < f", "mapfile -C runs text as commands"),
        ("git rebase -x 'git push' main", "git rebase told to run a command"),
        ("git submodule foreach git push", "git submodule foreach runs the commands"),
        ("git config --global alias.p push", "git config of a setting"),
        ("echo 'unclosed", "the shell's grammar cannot read it"),
        ("! { git push; }", "'{' where a command's name stands"),
    ],
)
def test_it_says_why_it_cannot_read_a_command(line, reason):
    assert reason in why(line)


@pytest.mark.parametrize(
    "line",
    [
        "echo $((1 + 2))",
        "a[0]=1; echo ${a[@]}",
        "[[ -f x && $y == z ]]",
        "git -c user.name=r -c color.ui=never log",
        "git config user.email r@example.com",
        "GIT_AUTHOR_NAME=r git commit -m x",
        "read -r line < f",
        "sh --version",
        "declare -a xs=(1 2)",
    ],
)
def test_it_reads_common_harmless_forms_without_refusing(line):
    assert read_command_line(line).unreadable == []


def test_a_nested_shell_too_deep_is_unreadable():
    line = "git push"
    for _ in range(10):
        line = f"sh -c {line!r}" if "'" not in line else f'sh -c "{line}"'
    assert read_command_line(line).unreadable


def test_pattern_words_read_a_pattern_as_a_command_is_read():
    assert pattern_words("/usr/bin/git  push") == ("git", "push")
    assert pattern_words("make 'deploy now'") == ("make", "deploy now")


@settings(deadline=None)  # the brute-force oracle below tries up to 40 fillings per wild word
@given(
    st.lists(st.sampled_from(["git", "push", "x", WILD]), max_size=6),
    st.lists(st.sampled_from(["git", "push", "x"]), min_size=1, max_size=3),
)
def test_a_wild_word_could_be_any_words_and_a_literal_only_itself(words, target):
    """could_be() agrees with trying every way to fill the WILD words with 0–3 target words."""
    vocabulary = ["git", "push", "x"]

    def fillings(ws):
        if not ws:
            yield ()
            return
        heads = (
            [(ws[0],)]
            if ws[0] is not WILD
            else [()]
            + [(a,) for a in vocabulary]
            + [(a, b) for a in vocabulary for b in vocabulary]
            + [(a, b, c) for a in vocabulary for b in vocabulary for c in vocabulary]
        )
        for head in heads:
            for tail in fillings(ws[1:]):
                yield head + tail

    expected_prefix = any(f[: len(target)] == tuple(target) for f in fillings(words))
    expected_exact = any(f == tuple(target) for f in fillings(words))
    assert could_be(tuple(words), tuple(target), prefix=True) == expected_prefix
    assert could_be(tuple(words), tuple(target), prefix=False) == expected_exact
