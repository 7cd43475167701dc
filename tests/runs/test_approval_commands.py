"""Approvals of commands (docs/approvals.md, docs/coding-loops.md): `approve: [bash]` holds every
command, `bash(git push:*)` the commands that start so however the command line wraps, quotes or
spells them (a shell parser reads it), and a command line that cannot be read is held by every
command pattern (fail closed); the approval shows the exact command."""

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.shell_commands import command_subjects
from runs.approvals import gate, gate_call
from runs.models import Approval, ApprovalState
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.recipes_git import git
from tests.runs.test_approvals import Person
from tests.workspaces.conftest import RECIPE, code_repo, write_recipe  # noqa: F401 (fixture)


def held(patterns, command):
    return gate_call(patterns, [("bash", command_subjects(command))])


@pytest.mark.parametrize(
    "command",
    [
        "git push origin main",
        "git push",
        "  git   push --force",
        "cd pkg && git push",
        "make test; git push origin x",
        "FOO=1 git push",
        "env GIT_SSH=x nice git push",
        "true || git push",
        "echo $(git push)",
        "bash -c 'git push origin main'",
        'sh -c "cd x && git push"',
        "git status | cat\ngit push",
    ],
)
def test_it_holds_a_prefix_however_the_command_line_wraps_it(command):
    assert held(["bash(git push:*)"], command) is not None


# every form a security review found walking round `bash(git push:*)`, and the ones it held
WALKS_ROUND = [
    "git  push",
    "$(git push)",
    "sh -c 'git push'",
    "git -C . push",
    "git --no-pager push",
    "/usr/bin/git push",
    "gi''t push",
    "eval 'git push'",
    "bash -lc 'git push'",
    "echo push | xargs git",
    "timeout 5 git push",
    "env -i git push",
    "nice git push",
    "{ git push; }",
    "if true; then git push; fi",
    "git -c alias.p=push p",
    "G=git; $G push",
    "echo 'git push' | sh",
    "command -p git push",
]


@pytest.mark.parametrize("command", WALKS_ROUND)
def test_no_form_of_a_gated_command_walks_round_its_pattern(command):
    assert held(["bash(git push:*)"], command) is not None


@pytest.mark.parametrize(
    "command",
    [
        "eval 'git push'",
        "G=git; $G push",
        "echo 'git push' | sh",
        "git -c alias.p=push p",
        "source ./deploy.sh",
        ". ./deploy.sh",
        "alias p='git push'; p",
        "p() { git push; }; p",
        "bash deploy.sh",
        "bash <<EOF\ngit push\nEOF",
        "$(echo git) push",
        "`echo git` push",
        "git config alias.p push && git p",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p",
        "trap 'git push' EXIT",
        "x='a[$(git push)]'; echo $((x))",
        "echo $(( ",
        "xargs -I{} sh -c '{}'",
    ],
)
def test_what_cannot_be_read_needs_approval_under_any_command_pattern(command):
    """Fail closed: a line the parser cannot reduce to known simple commands is held by every
    command pattern, whatever it names, and the approval says why."""
    assert held(["bash(git push:*)"], command) is not None
    matched = held(["bash(make deploy)"], command)
    assert matched is not None and matched[0] == "bash(make deploy)"
    assert "cannot tell what it runs" in matched[1]
    assert held(["save_result:*"], command) is None  # a pattern of another tool is not a command pattern


@pytest.mark.parametrize(
    "command",
    [
        "git pushy",
        "git status",
        "echo git push",
        "git log --grep push",
        "ls",
        "ls -la src",
        "python -m pytest",
        "python3 -m pytest -q tests 2>&1 | tail -20",
        "cd pkg && python3 -m unittest -v",
        "git diff --stat",
        "git commit -m 'git push later'",
        "git -c user.name=rysh -c user.email=r@example.com commit -qm fix",
        "grep -rn 'git push' docs",
        "find . -name '*.py' | xargs grep -l push",
        "for f in *.py; do echo $f; done",
        "cat calc.py | head -n 20",
        "make test",
        "timeout 60 npm test",
        "bash -c 'git status'",
    ],
)
def test_it_lets_other_commands_through(command):
    assert held(["bash(git push:*)"], command) is None


def test_bare_bash_holds_every_command_and_an_exact_pattern_only_that_command():
    assert held(["bash"], "ls") == ("bash", "")
    assert held(["bash(make deploy)"], "make deploy")[0] == "bash(make deploy)"
    assert held(["bash(make deploy)"], "nice make deploy && echo ok")[0] == "bash(make deploy)"
    assert held(["bash(make deploy)"], "make deploy-docs") is None
    assert held(["bash(make deploy)"], "make deploy now") is None
    # the old `tool:glob` form still works for every tool, the new one never matches another tool
    assert gate(["bash(git push:*)"], "edit", ["git push"]) is None
    assert gate(["save_result:*.md"], "save_result", ["notes.md"]) == ("save_result:*.md", "notes.md")


def test_a_pattern_naming_a_wrapper_or_a_path_holds_it_too():
    assert held(["bash(sudo:*)"], "sudo -u root git push") is not None
    assert held(["bash(/usr/bin/git push:*)"], "git push") is not None
    assert held(["bash(rm -rf:*)"], "rm -rf build") is not None
    assert held(["bash(rm -rf:*)"], "rm -r build") is None


@given(st.text(alphabet=st.sampled_from(list("ab ;&|()$`'\"\n-=")), max_size=40))
def test_a_pushing_command_after_any_prefix_of_shell_noise_is_held(noise):
    """Whatever comes before `; git push`, the push is held (a separator always starts anew)."""
    assert held(["bash(git push:*)"], f"{noise}; git push") is not None


# -- generated forms: a command wrapped in random wrappers, quotes and compound commands --------


@st.composite
def spelled(draw, word: str) -> str:
    """One word as the shell reads it back: plain, quoted whole or in part, escaped, ANSI-C."""
    cut = draw(st.integers(1, max(1, len(word) - 1)))
    forms = [
        word,
        f"'{word}'",
        f'"{word}"',
        f"{word[:cut]}''{word[cut:]}",
        f'{word[:cut]}""{word[cut:]}',
        f"'{word[:cut]}'\"{word[cut:]}\"",
        f"$'{word}'",
        f"$'\\x{ord(word[0]):02x}{word[1:]}'",
    ]
    if word[cut - 1 : cut].isalnum():
        forms.append(f"{word[: cut - 1]}\\{word[cut - 1 :]}")
    return draw(st.sampled_from(forms))


WRAPPERS = [
    [],
    ["env"],
    ["env", "-i"],
    ["env", "-u", "HOME"],
    ["env", "LANG=C"],
    ["timeout", "5"],
    ["timeout", "-s", "KILL", "10s"],
    ["timeout", "--kill-after=1", "5"],
    ["nice"],
    ["nice", "-n", "5"],
    ["nice", "-5"],
    ["nohup"],
    ["command"],
    ["command", "-p"],
    ["exec"],
    ["sudo"],
    ["sudo", "-u", "root", "-E"],
    ["doas"],
    ["stdbuf", "-oL"],
    ["stdbuf", "-o", "0"],
    ["time"],
    ["time", "-p"],
    ["ionice", "-c", "2", "-n", "7"],
    ["setsid"],
    ["setsid", "-w"],
    ["xargs"],
    ["xargs", "-0", "-r"],
    ["busybox"],
]
GITS = ["git", "/usr/bin/git", "./git", "/usr/local/bin/git"]
GIT_OPTIONS = [[], ["-C", "."], ["--no-pager"], ["-P"], ["-c", "user.name=x"], ["--git-dir=.git"], ["--work-tree", "."]]
LAYERS = [
    "{{ {}; }}",
    "( {} )",
    "if true; then {}; fi",
    "true && {}",
    "false || {}",
    "{} | cat",
    "echo start; {}",
    "echo $( {} )",
    'echo "$( {} )"',
    "cat <( {} )",
    "for f in a b; do {}; done",
    "while false; do :; done; {}",
    "case a in a) {};; esac",
    "! ( {} )",
    "{} & wait",
    "{} 2>&1 >/dev/null",
    "export FOO=1; {}",
]


@st.composite
def command_line(draw, subcommand: str) -> str:
    """`git SUBCOMMAND` in random wrappers, spellings, git options and compound commands."""
    words = [*draw(st.lists(st.sampled_from(WRAPPERS), max_size=3))]
    words = [word for wrapper in words for word in wrapper]
    words += [draw(st.sampled_from(GITS)), *draw(st.sampled_from(GIT_OPTIONS)), subcommand]
    words += draw(st.sampled_from([[], ["origin"], ["origin", "main"], ["--force"]]))
    line = " ".join(word if "=" in word[:4] else draw(spelled(word)) for word in words)
    for _ in range(draw(st.integers(0, 3))):
        layer = draw(st.sampled_from([*LAYERS, "bash -c {}", "sh -lc {}", "zsh -c {}"]))
        line = layer.format(shlex.quote(line)) if " -c" in layer or "-lc" in layer else layer.format(line)
    return line


@given(command_line("push"))
def test_a_gated_command_is_held_in_every_generated_form(line):
    assert held(["bash(git push:*)"], line) is not None, line


@given(command_line("status"))
def test_an_ungated_command_stays_ungated_in_every_generated_form(line):
    assert held(["bash(git push:*)"], line) is None, (line, command_subjects(line))


GATED = RECIPE.replace('workdir: "{workdir}"', 'workdir: "{workdir}"\n    approve: ["bash(git push:*)"]')


@pytest.mark.django_db(transaction=True)
def test_a_gated_command_waits_for_a_person_who_sees_the_exact_command(code_repo):
    from runs import services

    path = write_recipe(code_repo, workdir="pkg", name="gated", text=GATED)
    git(code_repo, "add", "-A")
    git(code_repo, "commit", "-q", "-m", "gated")
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    model = FakeModel(
        task=[
            {"text": "ls", "tools": [tool("bash", command="ls")]},
            {"text": "push", "tools": [tool("bash", command="cd .. && git push origin HEAD")]},
            {"text": "Done."},
        ]
    )
    person = Person(approved=False, reason="no pushing from a run")
    person.start()
    run = drive(run, model)
    person.join(10)
    approval = Approval.objects.get(run=run)
    assert approval.state == ApprovalState.REJECTED
    assert approval.tool_input == {"command": "cd .. && git push origin HEAD"}
    assert "git push origin HEAD" in approval.action_text
    steps = run.passes.get().steps.order_by("number")
    assert "exit status: 0" in steps[0].tool_results[0]["content"]  # ls needed nobody
    assert steps[1].tool_results[0]["content"].startswith("not done: a person rejected this action")
