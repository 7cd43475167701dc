"""rysh's packages read by the pure reader: rysh.pkg.yaml and an agent's SKILL.md, every bad
input refused at its file, line and field (docs/packages.md)."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalogue.packages import KNOWN_TOOLS, agent_recipe, read_package, recipe_kind, works_in_copy
from catalogue.packages.manifest import read_manifest
from catalogue.packages.skill import read_skill
from catalogue.recipe import RecipeError, parse_recipe

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/packages/test-fixer"
MANIFEST = (FIXTURE / "rysh.pkg.yaml").read_text()
SKILL = (FIXTURE / "SKILL.md").read_text()


def files(manifest=MANIFEST, skill=SKILL, **more):
    return {"rysh.pkg.yaml": manifest, "SKILL.md": skill, **more}


def issues(call):
    with pytest.raises(RecipeError) as caught:
        call()
    return [str(issue) for issue in caught.value.issues]


def test_it_reads_an_agent_package_in_rysh_format():
    package = read_package("test-fixer", files(**{"evals/fix-mean/task.md": "", "evals/fix-mean/expect.yaml": ""}))
    manifest, skill = package.manifest, package.skill
    assert (manifest.name, manifest.version, manifest.type, manifest.entry) == (
        "@team/test-fixer",
        "0.2.0",
        "agent",
        "SKILL.md",
    )
    assert manifest.label == "@team/test-fixer@0.2.0"
    assert manifest.declares_tools == ("bash", "file_read", "edit", "grep", "glob")
    assert (skill.name, skill.model, skill.worktree, skill.auto_approve) == (
        "test-fixer",
        "claude-sonnet-5-5",
        True,
        True,
    )
    assert skill.instructions.startswith("You make failing tests pass.")
    assert package.evals == ("fix-mean",)


def test_a_skill_without_a_name_is_refused_at_its_front_matter():
    text = SKILL.replace("name: test-fixer\n", "")
    assert issues(lambda: read_skill(text, path=".rysh/packages/x/SKILL.md")) == [
        "SKILL.md:1 name: missing: an agent's SKILL.md names it in its front matter (name: ...)"
    ]


def test_a_model_the_lineup_does_not_know_is_refused_at_its_line_with_the_nearest():
    text = SKILL.replace("model: claude-sonnet-5-5", "model: claude-sonet-5-5")
    assert issues(lambda: read_skill(text)) == [
        "SKILL.md:4 model: unknown model 'claude-sonet-5-5': expected a model of the lineup, such as "
        "claude-sonnet-5 (did you mean 'claude-sonnet-5-5'?)"
    ]


def test_an_unknown_front_matter_key_names_the_nearest():
    text = SKILL.replace("isolation: worktree", "isolaton: worktree")
    assert issues(lambda: read_skill(text)) == [
        "SKILL.md:5 isolaton: unknown key 'isolaton' (did you mean 'isolation'?)"
    ]


def test_bad_values_of_isolation_and_auto_approve_are_refused():
    text = SKILL.replace("isolation: worktree", "isolation: worktrees").replace(
        "auto_approve: true", "auto_approve: yes"
    )
    assert issues(lambda: read_skill(text)) == [
        "SKILL.md:5 isolation: expected worktree or none, got 'worktrees'",
        "SKILL.md:6 auto_approve: expected true or false, got yes",
    ]


def test_empty_instructions_are_refused():
    text = SKILL.split("---\n\n", 1)[0] + "---\n\n"
    assert issues(lambda: read_skill(text))[0].startswith("SKILL.md:8 instructions: the agent's instructions")


def test_a_missing_entry_is_refused_at_the_manifests_entry_line():
    assert issues(lambda: read_package("test-fixer", {"rysh.pkg.yaml": MANIFEST})) == [
        "rysh.pkg.yaml:5 entry: 'SKILL.md' is not in the package folder .rysh/packages/test-fixer/: "
        "add it or name the file it has"
    ]


def test_an_unknown_manifest_key_names_the_nearest():
    text = MANIFEST.replace("declares_tools:", "declare_tools:")
    found = issues(lambda: read_manifest(text))
    assert found[0] == "rysh.pkg.yaml:7 declare_tools: unknown key 'declare_tools' (did you mean 'declares_tools'?)"


def test_a_humanoid_package_is_refused_as_not_supported_here():
    text = MANIFEST.replace("type: agent", "type: humanoid")
    assert issues(lambda: read_manifest(text)) == [
        "rysh.pkg.yaml:3 type: humanoid packages (agents that live in chat channels) are not supported here; "
        "an agent, recipe or loop package is"
    ]


def test_a_declared_tool_we_lack_is_named_at_its_line_never_dropped():
    text = MANIFEST.replace("  - grep\n", "  - symbol_search\n  - grep\n")
    found = issues(lambda: read_manifest(text))
    assert len(found) == 1
    assert found[0].startswith("rysh.pkg.yaml:11 declares_tools: tool 'symbol_search' is not available here")


def test_the_tools_being_added_beside_ours_are_known():
    text = MANIFEST.replace("  - glob\n", "  - glob\n  - test_run\n  - todo\n  - sub_agent\n")
    assert read_manifest(text).declares_tools[-3:] == ("test_run", "todo", "sub_agent")


def test_an_agent_declaring_the_browser_is_refused():
    text = MANIFEST.replace("  - glob\n", "  - browser_action\n")
    assert "only a web recipe package drives a browser" in issues(lambda: read_package("x", files(manifest=text)))[0]


def test_missing_required_manifest_keys_are_each_named():
    found = issues(lambda: read_manifest('name: "@team/x"\ndescription: d\n'))
    assert [line.split(":", 2)[1].split(" ")[1] for line in found] == ["version", "type", "entry"]


def test_an_entry_leaving_the_folder_is_refused():
    text = MANIFEST.replace("entry: SKILL.md", "entry: ../secrets/SKILL.md")
    assert issues(lambda: read_manifest(text)) == [
        "rysh.pkg.yaml:5 entry: expected a file inside the package folder, got a path that leaves it"
    ]


def test_a_recipe_packages_kind_is_inferred_from_its_keys():
    assert recipe_kind("---\nurl: https://example.com\n---\nx") == "web"
    assert recipe_kind("---\nweb_read: text\n---\nx") == "web"
    assert recipe_kind('---\nworkdir: "."\n---\nx') == "code"
    assert recipe_kind("---\ndescription: d\n---\nx") == "task"
    assert recipe_kind("all prompt") == "task"


def test_a_loop_package_reads_its_entry_as_a_recipe():
    manifest = MANIFEST.replace("type: agent", "type: loop")
    entry = '---\nargs: [goal]\nworkdir: "."\nloop:\n  while:\n    prompts:\n      until: "{{goal}} done"\n---\nDo {{goal}}.\n'
    package = read_package("softdev", files(manifest=manifest, skill=entry))
    assert (package.recipe.kind, package.recipe.name, package.recipe.args) == ("code", "softdev", ("goal",))
    broken = entry.replace("workdir", "wrkdir")
    assert any(
        "wrkdir" in line for line in issues(lambda: read_package("softdev", files(manifest=manifest, skill=broken)))
    )


def test_an_agents_run_is_a_recipe_with_its_instructions_then_the_prompt():
    package = read_package("test-fixer", files())
    built = agent_recipe(package, prompt="make the tests pass")
    spec = parse_recipe(built.text, path=built.path, kind=built.kind)
    assert (built.kind, spec.name, spec.workdir, spec.executor_model) == (
        "code",
        "agent-test-fixer",
        ".",
        "claude-sonnet-5-5",
    )
    assert spec.prompt.startswith("You make failing tests pass.")
    assert spec.prompt.endswith("## The task\n\nmake the tests pass")
    assert spec.approve == () and spec.do.auto_approve and not spec.loop_while.runs_loop


def test_auto_approve_false_holds_every_call_of_the_task_leg():
    package = read_package("test-fixer", files(skill=SKILL.replace("auto_approve: true", "auto_approve: false")))
    built = agent_recipe(package, prompt="go", budget="2b")
    spec = parse_recipe(built.text, path=built.path, kind=built.kind)
    assert (spec.do.auto_approve, spec.do.budget_size, spec.approve) == (False, 400_000, ())


def test_an_agent_without_worktree_and_without_coding_tools_is_a_task_without_a_copy():
    manifest = MANIFEST.split("declares_tools:")[0]
    package = read_package("helper", files(manifest=manifest, skill=SKILL.replace("isolation: worktree\n", "")))
    assert not works_in_copy(package)
    built = agent_recipe(package, prompt="summarise")
    assert built.kind == "task" and parse_recipe(built.text, path=built.path, kind=built.kind).workdir is None


@given(st.lists(st.sampled_from([t for t in KNOWN_TOOLS if t != "browser_action"]), max_size=8))
def test_any_list_of_known_tools_reads_back_as_written(tools):
    text = MANIFEST.split("declares_tools:")[0] + "declares_tools: [" + ", ".join(tools) + "]\n"
    assert read_manifest(text).declares_tools == tuple(tools)


@given(
    st.lists(st.sampled_from(KNOWN_TOOLS), max_size=4),
    st.from_regex(r"[a-z][a-z_]{2,12}", fullmatch=True).filter(lambda n: n not in KNOWN_TOOLS),
    st.lists(st.sampled_from(KNOWN_TOOLS), max_size=4),
)
def test_an_unknown_tool_anywhere_in_the_list_is_reported_at_its_own_line(before, unknown, after):
    head = MANIFEST.split("declares_tools:")[0] + "declares_tools:\n"
    tools = [*before, unknown, *after]
    text = head + "".join(f"  - {t}\n" for t in tools)
    line = head.count("\n") + 1 + len(before)
    assert issues(lambda: read_manifest(text)) == [
        f"rysh.pkg.yaml:{line} declares_tools: tool {unknown!r} is not available here "
        f"(available: {', '.join(KNOWN_TOOLS)})"
    ]
