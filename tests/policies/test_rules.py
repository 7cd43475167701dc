"""Reading a policy file (docs/policy.md): every refusal names the file, line and field, an
unknown key or a wrong type anywhere is an error; merging never loosens either side."""

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.shell_commands import command_subjects
from budgets.plan import Allotment, Floor, resolve
from budgets.units import BOOK, PAGE
from catalogue.recipe import RecipeError
from catalogue.spec import DoSpec, WhileSpec
from policies.ceilings import lower_plan
from policies.rules import DENY, GATE, merge, parse_policy
from runs.engine.policing import PolicedCall

GOOD = """\
bash:
  allow: ["git:*", "python -m pytest:*"]
  deny:
    - "rm -rf:*"
    - bash(git push:*)
approval:
  auto_approve: [save_result]
  always_gate: [file_write, "bash(make deploy)"]
budget:
  ceilings:
    run: 20b
    pass: 3b
"""


def issues(text):
    with pytest.raises(RecipeError) as caught:
        parse_policy(text)
    return [str(issue) for issue in caught.value.issues]


def test_it_reads_every_key_with_the_line_it_is_written_on():
    policy = parse_policy(GOOD)
    assert [r.pattern for r in policy.allow] == ["bash(git:*)", "bash(python -m pytest:*)"]
    assert [(r.pattern, r.where) for r in policy.deny] == [
        ("bash(rm -rf:*)", ".rysh/policy.yaml:4 bash.deny"),
        ("bash(git push:*)", ".rysh/policy.yaml:5 bash.deny"),
    ]
    assert [r.pattern for r in policy.always_gate] == ["file_write", "bash(make deploy)"]
    assert [r.pattern for r in policy.auto_approve] == ["save_result"]
    assert (policy.run.tokens, policy.run.where) == (20 * BOOK, ".rysh/policy.yaml:11 budget.ceilings.run")
    assert (policy.pass_.tokens, policy.pass_.where) == (3 * BOOK, ".rysh/policy.yaml:12 budget.ceilings.pass")


def test_an_empty_file_is_a_policy_without_rules():
    assert merge([parse_policy("")]).empty
    assert merge([parse_policy("# nothing yet\n")]).empty


@pytest.mark.parametrize(
    "text, expected",
    [
        ("bash:\n  allow: [ls]\n  denied: [rm]\n", ".rysh/policy.yaml:3 bash.denied: unknown key 'denied'"),
        ("proxy:\n  required: true\n", ".rysh/policy.yaml:1 proxy: unknown key 'proxy'"),
        ("budget:\n  ceilings:\n    total: 3b\n", ".rysh/policy.yaml:3 budget.ceilings.total: unknown key 'total'"),
        ("budget:\n  ceilings:\n    pass: 3b\n    run: lots\n", ".rysh/policy.yaml:4 budget.ceilings.run: expected"),
        ("budget:\n  ceilings:\n    run: 0\n", ".rysh/policy.yaml:3 budget.ceilings.run: expected"),
        ("bash:\n  deny: rm -rf\n", ".rysh/policy.yaml:2 bash.deny: expected a list of patterns"),
        ("bash:\n  deny: [3]\n", ".rysh/policy.yaml:2 bash.deny[0]: expected a command"),
        ("bash:\n  deny: ['git * push']\n", ".rysh/policy.yaml:2 bash.deny[0]: expected a command"),
        ("bash:\n  deny: ['edit(x:*)']\n", ".rysh/policy.yaml:2 bash.deny[0]: expected a command"),
        ("approval:\n  always_gate: ['Not A Tool']\n", ".rysh/policy.yaml:2 approval.always_gate[0]: expected a tool"),
        ("bash: [ls]\n", ".rysh/policy.yaml:1 bash: expected a mapping with keys allow, deny"),
        ("- bash\n", ".rysh/policy.yaml:1 frontmatter: expected a mapping"),
        ("bash:\n  deny: [rm\n", ".rysh/policy.yaml:2"),
    ],
)
def test_it_refuses_with_the_file_line_and_field(text, expected):
    found = issues(text)
    assert any(issue.startswith(expected) for issue in found), found


def test_it_reports_every_issue_at_once():
    found = issues("bash:\n  deny: [3]\nbudget:\n  ceilings:\n    run: lots\nextra: 1\n")
    assert len(found) == 3, found


def test_the_org_file_is_named_by_its_own_label():
    assert issues("bash:\n  deny: [3]\n")[0].startswith(".rysh/policy.yaml:2")
    with pytest.raises(RecipeError) as caught:
        parse_policy("bash:\n  deny: [3]\n", label="/etc/rysh/org.yaml")
    assert str(caught.value).startswith("/etc/rysh/org.yaml:2 bash.deny[0]")


def decide_on(policy, tool, **arguments):
    from policies.rules import decide

    subjects = command_subjects(arguments["command"]) if tool == "bash" else list(arguments.values())
    return decide(policy, PolicedCall([(tool, subjects)]))


def test_a_denied_command_is_refused_however_it_is_spelled():
    policy = merge([parse_policy(GOOD)])
    for command in ("rm -rf build", "cd x && rm -rf /", "bash -c 'rm -rf .'", "nice git push origin main"):
        decision = decide_on(policy, "bash", command=command)
        assert decision is not None and decision.action == DENY, command
    assert "in .rysh/policy.yaml:4 bash.deny" in decide_on(policy, "bash", command="rm -rf x").refusal()


def test_allow_lets_only_its_commands_run_without_asking():
    policy = merge([parse_policy(GOOD)])
    assert decide_on(policy, "bash", command="git status") is None
    assert decide_on(policy, "bash", command="python -m pytest -q") is None
    held = decide_on(policy, "bash", command="git status && curl example.com")  # every command must be allowed
    assert held.action == GATE and held.rule.endswith("bash.allow")
    # a line that cannot be read is never allowed, and any deny holds it (fail closed)
    assert decide_on(merge([parse_policy("bash:\n  allow: [ls]\n")]), "bash", command="eval ls").action == GATE
    assert decide_on(policy, "bash", command="eval 'git status'").action == DENY
    assert decide_on(policy, "file_write", path="a", content="b").action == GATE  # always_gate
    assert decide_on(policy, "file_read", path="a") is None


def test_auto_approve_lifts_the_allowlists_gate_only_when_every_file_allows_it():
    org = parse_policy("bash:\n  allow: [ls]\napproval:\n  auto_approve: ['bash(make:*)']\n", label="org")
    repo_with = parse_policy("approval:\n  auto_approve: ['bash(make test)']\n")
    repo_without = parse_policy("budget:\n  ceilings:\n    pass: 1b\n")
    assert decide_on(merge([org]), "bash", command="make all") is None
    assert decide_on(merge([org, repo_with]), "bash", command="make test") is None
    assert decide_on(merge([org, repo_with]), "bash", command="make all").action == GATE
    assert decide_on(merge([org, repo_without]), "bash", command="make test").action == GATE  # the strict reading


def test_ceilings_lower_the_plan_and_say_which_rule_did():
    plan = resolve(DoSpec(budget_size=3 * BOOK), WhileSpec(max_iterations=5, until="done"))
    policy = merge([parse_policy("budget:\n  ceilings:\n    run: 4b\n    pass: 1b\n")])
    lowered, notes = lower_plan(plan, policy)
    assert lowered.per_pass.tokens == BOOK and lowered.split.task.tokens == BOOK
    assert lowered.outer_tokens == 4 * BOOK
    assert notes == [
        "policy (.rysh/policy.yaml:4 budget.ceilings.pass): pass budget lowered 3b -> 1b",
        "policy (.rysh/policy.yaml:3 budget.ceilings.run): run total lowered no limit -> 4b",
    ]
    same, none = lower_plan(plan, merge([parse_policy("budget:\n  ceilings:\n    pass: 9b\n")]))
    assert same == plan and none == []


def test_a_run_ceiling_alone_keeps_the_recipes_wrap_up_and_its_floor():
    # a 100p pass whose wrap-up share the floor raises past the pass, on purpose (docs/running-loops.md)
    do = DoSpec(budget_size=100 * PAGE, takeover_prompt="save what exists")
    plan = resolve(do, WhileSpec(max_iterations=2, until="done"))
    assert plan.split.takeover is not None and plan.split.worst.tokens > plan.per_pass.tokens
    lowered, notes = lower_plan(plan, merge([parse_policy("budget:\n  ceilings:\n    run: 1s\n")]))
    assert lowered.split == plan.split and lowered.outer_tokens == 20 * BOOK
    assert notes == ["policy (.rysh/policy.yaml:3 budget.ceilings.run): run total lowered no limit -> 1s"]
    # a pass ceiling splits again with the recipe's own floor, not the built-in one
    small = Floor(trigger=Allotment(10, 30, 5 * PAGE), raise_to=Allotment(20, 60, 20 * PAGE))
    plan = resolve(dataclasses.replace(do, budget_size=3 * BOOK, floor=small), WhileSpec())
    lowered, _ = lower_plan(plan, merge([parse_policy("budget:\n  ceilings:\n    pass: 1b\n")]))
    assert lowered.split.floor == small and lowered.split.takeover is not None
    assert lowered.split.worst.tokens <= BOOK


# -- merging is never looser than either side ---------------------------------------------------

COMMANDS = ["git status", "git push origin main", "rm -rf build", "make test", "ls -la", "curl x", "eval 'ls'"]
COMMAND_PATTERNS = ["git:*", "git push:*", "rm:*", "rm -rf:*", "make test", "make:*", "ls:*", "curl:*", ":*"]
TOOLS = ["save_result", "file_write", "edit", "bash(git push:*)", "bash(make:*)"]


def yaml_list(items):
    return "[" + ", ".join(f"'{item}'" for item in items) + "]"


@st.composite
def policies(draw, label):
    lines = []
    allow = draw(st.one_of(st.none(), st.lists(st.sampled_from(COMMAND_PATTERNS), max_size=3)))
    deny = draw(st.lists(st.sampled_from(COMMAND_PATTERNS), max_size=2))
    if allow is not None or deny:
        lines.append("bash:")
        lines += [f"  allow: {yaml_list(allow)}"] if allow is not None else []
        lines += [f"  deny: {yaml_list(deny)}"] if deny else []
    auto = draw(st.one_of(st.none(), st.lists(st.sampled_from(TOOLS + ["bash(ls:*)"]), max_size=3)))
    gate = draw(st.lists(st.sampled_from(TOOLS), max_size=2))
    if auto is not None or gate:
        lines.append("approval:")
        lines += [f"  auto_approve: {yaml_list(auto)}"] if auto is not None else []
        lines += [f"  always_gate: {yaml_list(gate)}"] if gate else []
    run, per_pass = draw(st.one_of(st.none(), st.integers(1, 400))), draw(st.one_of(st.none(), st.integers(1, 400)))
    if run or per_pass:
        lines += ["budget:", "  ceilings:"]
        lines += [f"    run: {run}p"] if run else []
        lines += [f"    pass: {per_pass}p"] if per_pass else []
    return parse_policy("\n".join(lines) + "\n", label=label)


STRICTNESS = {None: 0, GATE: 1, DENY: 2}


def strictness(policy, tool, **arguments):
    decision = decide_on(policy, tool, **arguments)
    return STRICTNESS[decision.action if decision else None]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(org=policies("org"), repo=policies(".rysh/policy.yaml"), command=st.sampled_from(COMMANDS))
def test_a_command_is_never_treated_more_loosely_by_the_merge(org, repo, command):
    merged = merge([org, repo])
    for side in (org, repo):
        assert strictness(merged, "bash", command=command) >= strictness(merge([side]), "bash", command=command)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(org=policies("org"), repo=policies(".rysh/policy.yaml"), name=st.sampled_from(["save_result", "file_write"]))
def test_a_tool_call_is_never_treated_more_loosely_by_the_merge(org, repo, name):
    merged = merge([org, repo])
    for side in (org, repo):
        assert strictness(merged, name, path="a.md") >= strictness(merge([side]), name, path="a.md")


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    org=policies("org"),
    repo=policies(".rysh/policy.yaml"),
    size=st.integers(1, 300),
    total=st.one_of(st.none(), st.integers(1, 2000)),
)
def test_the_merged_ceilings_are_never_above_either_side(org, repo, size, total):
    plan = resolve(
        DoSpec(budget_size=size * PAGE), WhileSpec(max_iterations=3, until="done", budget=total and total * PAGE)
    )
    merged, _ = lower_plan(plan, merge([org, repo]))
    for side in (org, repo):
        alone, _ = lower_plan(plan, merge([side]))
        assert merged.per_pass.tokens <= alone.per_pass.tokens
        assert merged.split.worst.tokens <= alone.split.worst.tokens
        assert merged.worst_tokens <= alone.worst_tokens
        if side.pass_:
            assert merged.split.worst.tokens <= side.pass_.tokens
        if side.run:
            assert merged.worst_tokens <= side.run.tokens
