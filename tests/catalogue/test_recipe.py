"""Recipe files -> RecipeSpec: the seed recipe, defaults, and a corpus of broken files."""

from __future__ import annotations

import dataclasses
import os
import textwrap

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalogue.recipe import (
    NAME_RE,
    RecipeError,
    RecipeIssue,
    load_recipe,
    parse_recipe,
    placeholders,
    render,
    resolve_output_dir,
    unfilled_placeholders,
)
from catalogue.spec import DoSpec, Kind, RecipeSpec, WhileSpec

WEB = ".rysh/automations/webs/x.md"
TASK = ".rysh/automations/tasks/x.md"

# The real publishing recipe from the seeds (002), frontmatter verbatim.
SEED_FRONTMATTER = """\
---
description: Publish a local markdown article to medium.com on halilagin's account.
web_profile: halilagin-medium   # persistent, pre-authenticated browser profile
url: https://medium.com/new-story
args: [article_path]            # run as: ##auto web run halilagin-medium /path/to/article.md
output_dir: halilagin-medium/results
loop:
  do:                           # one publishing session
    max_iterations: 150
    max_duration: 15m
    budget:
      size: 4b                  # 4 "books" = 800k tokens, hard ceiling
      watch:
        takeover_when: 90       # at 90% consumed, switch to the wrap-up leg
        takeover_prompt: >
          The publishing budget is used up - stop now. Medium autosaves as you
          type, so the story should exist as a DRAFT: report the draft URL,
          what remains to be done, and save that status to the results file.
          Do NOT publish a half-written article.
  while:                        # the OUTER loop - retry sessions until published
    enabled: true
    max_iterations: 5
    max_duration: 15m
    budget: 20b                 # TOTAL across passes
    prompts:
      until: >
        The results file for this run contains a PUBLISHED story URL for the
        article at {{args}} - the story is live on the profile, not a draft.
      iterate_with: >
        Continue the interrupted publish of {{args}}. Check the profile's
        stories and drafts FIRST: if the draft already exists, open it, finish
        the remaining formatting, and publish THAT draft - never create a
        duplicate story.
---
"""
SEED_BODY = "Publish the markdown article at {{article_path}} to Medium.\n"


def recipe(frontmatter: str, body: str = "Do the thing.\n") -> str:
    """A recipe file from an indented frontmatter block (without the --- fences)."""
    return "---\n" + textwrap.dedent(frontmatter).lstrip("\n") + "---\n" + body


def issues_of(text: str, path: str = WEB, **kwargs) -> tuple[RecipeIssue, ...]:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, path=path, **kwargs)
    return caught.value.issues


def only_issue(text: str, path: str = WEB, **kwargs) -> RecipeIssue:
    issues = issues_of(text, path, **kwargs)
    assert len(issues) == 1, [str(i) for i in issues]
    return issues[0]


# --- the seed recipe and defaults ------------------------------------------------------------


def test_it_parses_the_seed_publishing_recipe():
    spec = parse_recipe(SEED_FRONTMATTER + "\n" + SEED_BODY, path=".rysh/automations/webs/halilagin-medium.md")
    assert (spec.kind, spec.name, spec.target) == ("web", "halilagin-medium", "web/halilagin-medium")
    assert spec.description == "Publish a local markdown article to medium.com on halilagin's account."
    assert spec.web_profile == "halilagin-medium"
    assert spec.url == "https://medium.com/new-story"
    assert spec.args == ("article_path",)
    assert spec.output_dir == "halilagin-medium/results"
    assert spec.prompt == SEED_BODY.strip()
    assert spec.do.max_iterations == 150
    assert spec.do.max_duration == 900
    assert spec.do.budget_size == 800_000
    assert spec.do.takeover_when == 90
    assert spec.do.takeover_prompt.startswith("The publishing budget is used up - stop now.")
    assert spec.do.takeover_prompt.endswith("Do NOT publish a half-written article.")
    assert spec.do.interval == 50 and spec.do.auto_continue is True  # defaults kept
    assert spec.loop_while.enabled is True
    assert spec.loop_while.max_iterations == 5
    assert spec.loop_while.max_duration == 900
    assert spec.loop_while.budget == 4_000_000
    assert spec.loop_while.until == (
        "The results file for this run contains a PUBLISHED story URL for the article at "
        "{{args}} - the story is live on the profile, not a draft."
    )
    assert spec.loop_while.iterate_with.startswith("Continue the interrupted publish of {{args}}.")
    assert spec.loop_while.iterate_with.endswith("never create a duplicate story.")
    assert spec.loop_while.runs_loop
    assert spec.warnings == ()


def test_it_fills_defaults_for_a_bare_task():
    spec = parse_recipe("Summarise the news.", path=".rysh/automations/tasks/news.md")
    assert spec == RecipeSpec(
        path=".rysh/automations/tasks/news.md",
        kind="task",
        name="news",
        prompt="Summarise the news.",
        output_dir="tasks/news/results",
    )
    assert spec.do == DoSpec() and spec.loop_while == WhileSpec()
    assert (spec.do.interval, spec.do.max_iterations, spec.do.max_duration) == (50, 300, 1200)
    assert (spec.do.budget_size, spec.do.takeover_when, spec.do.auto_continue) == (600_000, 90, True)
    assert spec.loop_while.max_iterations == 5 and not spec.loop_while.runs_loop
    assert spec.schedule is None and spec.web_profile == "default" and spec.web_read == "text"


def test_it_treats_a_file_without_frontmatter_as_all_prompt():
    text = "  Look at {{arg1}}.\n\nkind: web\n---\nstill prompt\n"
    spec = parse_recipe(text, path=TASK)
    assert spec.prompt == text.strip()
    assert spec.kind == "task"


def test_it_reads_an_empty_frontmatter_as_defaults():
    spec = parse_recipe("---\n---\nGo.", path=TASK)
    assert spec.prompt == "Go." and spec.do == DoSpec()


def test_it_accepts_dots_as_the_closing_fence_and_crlf_lines():
    spec = parse_recipe("---\r\nkind: task\r\n...\r\nGo.\r\n", path="x.md")
    assert spec.kind == "task" and spec.prompt == "Go."


def test_it_takes_the_kind_from_the_command_or_the_key():
    assert parse_recipe("Go.", path="x.md", kind="web").kind == "web"
    assert parse_recipe(recipe("kind: task\n"), path="x.md").kind == "task"
    assert parse_recipe("Go.", path="x.md", kind="task", name="other").name == "other"
    assert parse_recipe("Go.", path="x.md", kind="webs").kind is Kind.WEB  # a folder name too
    assert parse_recipe("Go.", path=TASK).kind is Kind.TASK


def test_it_uses_the_legacy_step_when_there_is_no_loop_do():
    spec = parse_recipe(
        recipe("""
        step:
          interval: 10
          max_duration: 7m
          budget: {size: 2b, watch: {takeover_when: 80, takeover_prompt: Land it.}}
    """),
        path=TASK,
    )
    assert spec.do == DoSpec(
        interval=10, max_duration=420, budget_size=400_000, takeover_when=80, takeover_prompt="Land it."
    )
    assert spec.warnings == ()


def test_it_lets_loop_do_win_over_step_entirely_and_warns():
    spec = parse_recipe(
        recipe("""
        step:
          interval: 10
          max_duration: 7m
        loop:
          do:
            max_iterations: 40
    """),
        path=TASK,
    )
    assert spec.do == DoSpec(max_iterations=40)  # nothing from step leaks in
    assert spec.warnings == ("step is ignored: loop.do is present",)


def test_it_reads_every_other_field():
    spec = parse_recipe(
        recipe("""
        kind: web
        web_read: screenshot
        record: true
        schedule: "@every 30m"
        approve: [publish, send_email]
        allowed_domains: [Medium.com, "*.example.org", localhost]
        model: claude-sonnet
        judge_model: claude-haiku
        output_dir: ./out//here/
        loop:
          do:
            interval: 500
            auto_continue: false
            budget: 1.5b
            model: claude-opus
          while:
            enabled: false
            budget: {size: 3s}
            judge_model: claude-judge
            prompts: {until: Done.}
    """),
        path="x.md",
    )
    assert (spec.web_read, spec.record, spec.schedule) == ("screenshot", True, "@every 30m")
    assert spec.approve == ("publish", "send_email")
    assert spec.allowed_domains == ("medium.com", "*.example.org", "localhost")
    assert spec.output_dir == "out/here"
    assert (spec.do.interval, spec.do.auto_continue, spec.do.budget_size) == (500, False, 300_000)
    assert spec.executor_model == "claude-opus" and spec.judge == "claude-judge"
    assert spec.loop_while.budget == 12_000_000 and spec.loop_while.enabled is False
    assert not spec.loop_while.runs_loop


@pytest.mark.parametrize(
    "written, stored",
    [
        ("off", "off"),
        ("None", "off"),
        ("'@daily'", "@daily"),
        ('"@HOURLY"', "@hourly"),
        ("'@weekly'", "@weekly"),
        ("'@monthly'", "@monthly"),
        ("0 7 * * *", "0 7 * * *"),
        ('"*/15  9-17 * * MON-FRI"', "*/15 9-17 * * MON-FRI"),
    ],
)
def test_it_reads_schedules(written, stored):
    spec = parse_recipe(recipe(f"schedule: {written}\n"), path=TASK)
    assert spec.schedule == stored


def test_it_resolves_yaml_merge_keys_without_calling_them_duplicates():
    spec = parse_recipe(
        recipe("""
        loop:
          do: &base
            interval: 5
            max_iterations: 20
          while:
            max_iterations: 3
        step:
          <<: *base
          interval: 7
    """),
        path=TASK,
    )
    assert spec.do.interval == 5 and spec.warnings == ("step is ignored: loop.do is present",)


# --- the corpus of broken recipes ------------------------------------------------------------

# (file text, path, line, field, message fragment); each file has exactly one problem.
BROKEN = [
    pytest.param(
        recipe("description: a\n url: b\n"),
        WEB,
        3,
        "url",
        "invalid YAML: mapping values are not allowed here",
        id="bad-yaml",
    ),
    pytest.param(
        "---\nkind: web\nloop: [1, 2\n---\nGo.",
        WEB,
        3,
        "loop",
        "invalid YAML: expected ',' or ']'",
        id="unclosed-flow-list",
    ),
    pytest.param(
        recipe("schedule: @daily\n"),
        TASK,
        2,
        "schedule",
        'quote values that start with @, e.g. schedule: "@daily"',
        id="unquoted-at",
    ),
    pytest.param(
        "---\ndescription: a\x00b\n---\nGo.",
        WEB,
        2,
        "description",
        "invalid YAML: character '\\x00' is not allowed",
        id="nul-char",
    ),
    pytest.param("---\nkind: web\nGo.\n", WEB, 1, "frontmatter", "never closed", id="unclosed-frontmatter"),
    pytest.param(
        recipe("- a\n- b\n"),
        WEB,
        2,
        "frontmatter",
        "expected a mapping of settings (key: value lines), got a list",
        id="frontmatter-list",
    ),
    pytest.param(
        recipe("just some words\n"),
        WEB,
        2,
        "frontmatter",
        "expected a mapping of settings (key: value lines), got 'just some words'",
        id="frontmatter-scalar",
    ),
    pytest.param(
        recipe("""
        loop:
          do:
            budget:
              watch:
                takeover_when: 100
    """),
        WEB,
        6,
        "loop.do.budget.watch.takeover_when",
        "expected a whole number from 10 to 99, got 100",
        id="takeover-100",
    ),
    pytest.param(
        recipe("loop: {do: {interval: 0}}\n"),
        WEB,
        2,
        "loop.do.interval",
        "expected a whole number from 1 to 500, got 0",
        id="interval-0",
    ),
    pytest.param(
        recipe("loop: {do: {interval: 501}}\n"),
        WEB,
        2,
        "loop.do.interval",
        "expected a whole number from 1 to 500, got 501",
        id="interval-501",
    ),
    pytest.param(
        recipe("loop: {do: {interval: true}}\n"),
        WEB,
        2,
        "loop.do.interval",
        "expected a whole number from 1 to 500, got true",
        id="interval-bool",
    ),
    pytest.param(
        recipe("loop: {do: {interval: 2.5}}\n"),
        WEB,
        2,
        "loop.do.interval",
        "expected a whole number from 1 to 500, got 2.5",
        id="interval-float",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    max_iterations: 0\n"),
        WEB,
        4,
        "loop.do.max_iterations",
        "expected a whole number of at least 1, got 0",
        id="steps-0",
    ),
    pytest.param(
        recipe("loop:\n  while:\n    max_iterations: ten\n"),
        WEB,
        4,
        "loop.while.max_iterations",
        "expected a whole number of at least 1, got 'ten'",
        id="passes-text",
    ),
    pytest.param(
        recipe("loop:\n  while:\n    max_iterations: -1\n"),
        WEB,
        4,
        "loop.while.max_iterations",
        "got -1",
        id="passes-negative",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    max_duration: 15 minutes\n"),
        WEB,
        4,
        "loop.do.max_duration",
        "expected a duration such as 90s, 7m or 1h30m, got '15 minutes'",
        id="duration-garbage",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    max_duration: 0m\n"),
        WEB,
        4,
        "loop.do.max_duration",
        "greater than zero, got '0m'",
        id="duration-zero",
    ),
    pytest.param(
        recipe("loop:\n  while:\n    max_duration: 90\n"),
        WEB,
        4,
        "loop.while.max_duration",
        "expected a duration such as 90s, 7m or 1h30m, got 90",
        id="duration-bare-number",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    budget:\n      size: 0\n"),
        WEB,
        5,
        "loop.do.budget.size",
        "greater than zero, got 0",
        id="budget-zero",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    budget:\n      size: -3b\n"),
        WEB,
        5,
        "loop.do.budget.size",
        "greater than zero, got '-3b'",
        id="budget-negative",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    budget:\n      size: lots\n"),
        WEB,
        5,
        "loop.do.budget.size",
        "expected a budget size such as 20p, 4b or 1s",
        id="budget-garbage",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    budget:\n      size: 1.5p\n"),
        WEB,
        5,
        "loop.do.budget.size",
        "whole pages",
        id="budget-part-page",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    budget:\n      size: .inf\n"),
        WEB,
        5,
        "loop.do.budget.size",
        "expected a budget size such as 20p, 4b or 1s (a bare number means pages), got inf",
        id="budget-infinite",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    budget:\n      size: .nan\n"),
        WEB,
        5,
        "loop.do.budget.size",
        "expected a budget size such as 20p, 4b or 1s (a bare number means pages), got nan",
        id="budget-nan",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    budget: " + "9" * 40 + "b\n"),
        WEB,
        4,
        "loop.do.budget",
        "expected a budget size of at most 1000s, got '999",
        id="budget-huge",
    ),
    pytest.param(
        recipe("loop:\n  while:\n    max_duration: .inf\n"),
        WEB,
        4,
        "loop.while.max_duration",
        "expected a duration such as 90s, 7m or 1h30m, got inf",
        id="duration-infinite",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    budget: [4b]\n"),
        WEB,
        4,
        "loop.do.budget",
        "expected a mapping with keys size, watch, got a list",
        id="budget-list",
    ),
    pytest.param(
        recipe("loop:\n  while:\n    budget: 0b\n"),
        WEB,
        4,
        "loop.while.budget",
        "greater than zero, got '0b'",
        id="while-budget-zero",
    ),
    pytest.param(
        recipe("loop:\n  while:\n    budget:\n      size: nope\n"),
        WEB,
        5,
        "loop.while.budget.size",
        "got 'nope'",
        id="while-budget-map",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    auto_continue: yes\n"),
        WEB,
        4,
        "loop.do.auto_continue",
        "expected true or false, got yes",
        id="bool-yes",
    ),
    pytest.param(recipe("record: 1\n"), WEB, 2, "record", "expected true or false, got 1", id="record-number"),
    pytest.param(
        recipe("loop:\n  while:\n    enabled: 'true'\n"),
        WEB,
        4,
        "loop.while.enabled",
        "expected true or false, got 'true'",
        id="enabled-quoted",
    ),
    pytest.param(
        recipe("loop:\n  do:\n    budgt: 3b\n"),
        WEB,
        4,
        "loop.do.budgt",
        "unknown key 'budgt' (did you mean 'budget'?)",
        id="unknown-nested",
    ),
    pytest.param(
        recipe("modle: x\n"), WEB, 2, "modle", "unknown key 'modle' (did you mean 'model'?)", id="unknown-top"
    ),
    pytest.param(
        recipe("loop:\n  while:\n    until: done\n"),
        WEB,
        4,
        "loop.while.until",
        "unknown key 'until' (it belongs under loop.while.prompts)",
        id="unknown-home",
    ),
    pytest.param(recipe("zzz: 1\n"), WEB, 2, "zzz", "unknown key 'zzz'", id="unknown-far"),
    pytest.param(
        recipe("kind: web\n", body=""),
        WEB,
        4,
        "prompt",
        "the task prompt (the text after the frontmatter) is empty",
        id="empty-prompt",
    ),
    pytest.param(recipe("kind: web\n", body="\n  \n\t\n"), WEB, 4, "prompt", "is empty", id="blank-prompt"),
    pytest.param("", WEB, 1, "prompt", "is empty", id="empty-file"),
    pytest.param(
        recipe("output_dir: ../elsewhere\n"),
        WEB,
        2,
        "output_dir",
        "'../elsewhere' climbs out of the results root",
        id="output-dotdot",
    ),
    pytest.param(
        recipe("output_dir: a/../../b\n"),
        WEB,
        2,
        "output_dir",
        "climbs out of the results root",
        id="output-dotdot-inner",
    ),
    pytest.param(
        recipe("output_dir: ..\\\\b\n"), WEB, 2, "output_dir", "climbs out of the results root", id="output-backslash"
    ),
    pytest.param(
        recipe("output_dir: /etc/cron.d\n"),
        WEB,
        2,
        "output_dir",
        "expected a folder relative to the results root, got '/etc/cron.d'",
        id="output-absolute",
    ),
    pytest.param(
        recipe("output_dir: ''\n"), WEB, 2, "output_dir", "expected a non-empty text, got ''", id="output-empty"
    ),
    pytest.param(
        recipe("""
        loop:
          do:
            interval: 5
            interval: 6
    """),
        WEB,
        5,
        "loop.do.interval",
        "duplicate key 'interval': it is already set on line 4",
        id="duplicate",
    ),
    pytest.param(
        recipe("url: https://a.example\nurl: https://b.example\n"),
        WEB,
        3,
        "url",
        "duplicate key 'url'",
        id="duplicate-top",
    ),
    pytest.param(recipe("url: https://medium.com\n"), TASK, 2, "url", "applies to web recipes only", id="web-only-url"),
    pytest.param(recipe("record: true\n"), TASK, 2, "record", "applies to web recipes only", id="web-only-record"),
    pytest.param(
        recipe("kind: task\n"),
        WEB,
        2,
        "kind",
        "the kinds disagree: the file is under .rysh/automations/webs; the file says kind: task",
        id="kind-conflict",
    ),
    pytest.param(recipe("kind: job\n"), "x.md", 2, "kind", "expected web or task or code, got 'job'", id="kind-bad"),
    pytest.param(
        recipe("url: 'ftp://x.example'\n"),
        WEB,
        2,
        "url",
        "expected a web address starting with http:// or https://",
        id="url-ftp",
    ),
    pytest.param(
        recipe("web_read: video\n"), WEB, 2, "web_read", "expected text or screenshot, got 'video'", id="web-read"
    ),
    pytest.param(
        recipe("web_profile: My Profile\n"), WEB, 2, "web_profile", "expected a browser profile name", id="profile-name"
    ),
    pytest.param(
        recipe("description: ''\n"), WEB, 2, "description", "expected a non-empty text, got ''", id="description-empty"
    ),
    pytest.param(
        recipe("description:\n"), WEB, 2, "description", "expected a non-empty text, got nothing", id="description-null"
    ),
    pytest.param(
        recipe("description: 2020-02-30\n"), WEB, 2, "description", "cannot read this value", id="impossible-date"
    ),
    pytest.param(recipe("model: 42\n"), WEB, 2, "model", "expected a non-empty text, got 42", id="model-number"),
    pytest.param(
        recipe("loop:\n  do:\n    budget:\n      watch:\n        takeover_prompt: ' '\n"),
        WEB,
        6,
        "loop.do.budget.watch.takeover_prompt",
        "expected a non-empty text",
        id="takeover-prompt-blank",
    ),
    pytest.param(
        recipe("loop:\n  while:\n    prompts:\n      until: [a]\n"),
        WEB,
        5,
        "loop.while.prompts.until",
        "expected a non-empty text, got a list",
        id="until-list",
    ),
    pytest.param(
        recipe("args: article\n"), WEB, 2, "args", "expected a list of argument names, got 'article'", id="args-scalar"
    ),
    pytest.param(recipe("args: [a, a]\n"), WEB, 2, "args", "argument 'a' is listed twice", id="args-twice"),
    pytest.param(
        recipe("args:\n  - ok\n  - output_dir\n"),
        WEB,
        4,
        "args",
        "'output_dir' is a built-in placeholder",
        id="args-builtin",
    ),
    pytest.param(recipe("args: [arg2]\n"), WEB, 2, "args", "'arg2' is a built-in placeholder", id="args-positional"),
    pytest.param(recipe("args: [2fast]\n"), WEB, 2, "args", "expected an argument name", id="args-identifier"),
    pytest.param(
        recipe("approve: [publish, '']\n"), WEB, 2, "approve", "expected a tool name, got ''", id="approve-empty"
    ),
    pytest.param(
        recipe("allowed_domains: ['https://medium.com']\n"),
        WEB,
        2,
        "allowed_domains",
        "expected a host name such as example.com",
        id="domain-url",
    ),
    pytest.param(recipe("schedule: every day\n"), WEB, 2, "schedule", "expected off, @hourly", id="schedule-words"),
    pytest.param(recipe("schedule: 0 7 * *\n"), WEB, 2, "schedule", "5 cron fields", id="schedule-4-fields"),
    pytest.param(
        recipe("schedule: '@every soon'\n"),
        WEB,
        2,
        "schedule",
        "@every needs a duration: expected a duration such as 90s",
        id="schedule-every",
    ),
    pytest.param(recipe("schedule: false\n"), WEB, 2, "schedule", "got false", id="schedule-false"),
    pytest.param(
        recipe("step:\n  interval: 0\n"),
        WEB,
        3,
        "step.interval",
        "expected a whole number from 1 to 500",
        id="legacy-step",
    ),
    pytest.param(recipe("loop: 5\n"), WEB, 2, "loop", "expected a mapping with keys do, while", id="loop-scalar"),
    pytest.param(recipe("loop:\n  do:\n"), WEB, 3, "loop.do", "got nothing", id="do-null"),
    pytest.param(recipe("? [a]\n: b\n"), WEB, 2, "frontmatter", "expected a key name", id="complex-key"),
    pytest.param(recipe("loop:\n  do:\n    <<: 5\n"), WEB, 4, "loop.do", "cannot read this mapping", id="bad-merge"),
]


@pytest.mark.parametrize("text, path, line, field, fragment", BROKEN)
def test_it_refuses_each_broken_recipe_precisely(text, path, line, field, fragment):
    issue = only_issue(text, path)
    assert issue.path == os.path.basename(path)
    assert (issue.line, issue.field) == (line, field), str(issue)
    assert fragment in issue.message, str(issue)


def test_it_prints_the_exact_takeover_message():
    text = recipe("""
        loop:
          do:
            budget:
              watch:
                takeover_when: 5
    """)
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, path=WEB)
    assert str(caught.value) == (
        "x.md:6 loop.do.budget.watch.takeover_when: expected a whole number from 10 to 99, got 5"
    )


def test_it_keeps_yaml_line_and_column():
    issue = only_issue(recipe("kind: web\ndescription: a\n url: b\n"))
    assert (issue.line, issue.column) == (4, 5)
    assert str(issue).startswith("x.md:4:5 url: invalid YAML: ")


def test_it_refuses_a_bad_recipe_name():
    issue = only_issue("Go.", path=".rysh/automations/webs/My Recipe.md")
    assert (issue.path, issue.line, issue.field) == ("My Recipe.md", None, "name")
    assert "got 'My Recipe'; rename the file" in issue.message
    assert str(issue).startswith("My Recipe.md name: expected a recipe name")
    assert only_issue("Go.", path=WEB, name="../up").field == "name"


def test_it_refuses_a_recipe_whose_kind_nobody_says():
    issue = only_issue("Go.", path="x.md")
    assert (issue.line, issue.field) == (None, "kind")
    assert issue.message == (
        "cannot tell the kind: put the file under .rysh/automations/webs|tasks|codes/, or set kind: web|task|code"
    )


def test_it_refuses_a_command_kind_that_disagrees_with_the_folder():
    issue = only_issue("Go.", path=WEB, kind="task")
    assert issue.field == "kind" and "the command asks for a task recipe" in issue.message
    assert only_issue("Go.", path="x.md", kind="robot").message == ("expected web or task or code, got 'robot'")


def test_it_reports_every_error_of_a_file_together():
    text = recipe(
        """
        kind: task
        url: https://medium.com
        modle: x
        loop:
          do:
            interval: 0
            budget:
              size: 0
              watch:
                takeover_when: 5
          while:
            budget: lots
            until: done
        output_dir: ../x
    """,
        body="",
    )
    issues = issues_of(text, path="x.md")
    assert [(i.line, i.field) for i in issues] == [
        (3, "url"),
        (4, "modle"),
        (7, "loop.do.interval"),
        (9, "loop.do.budget.size"),
        (11, "loop.do.budget.watch.takeover_when"),
        (13, "loop.while.budget"),
        (14, "loop.while.until"),
        (15, "output_dir"),
        (17, "prompt"),
    ]
    message = str(RecipeError(issues))
    assert message.count("\n") == len(issues) - 1
    assert "x.md:11 loop.do.budget.watch.takeover_when: expected a whole number from 10 to 99, got 5" in message


def test_it_reports_a_yaml_error_and_an_empty_prompt_but_no_guessed_kind():
    issues = issues_of(recipe("kind: [web\n", body=""), path="x.md")
    assert [i.field for i in issues] == ["kind", "prompt"]


def test_it_errors_are_value_errors():
    assert issubclass(RecipeError, ValueError)
    issue = RecipeIssue("a.md", None, "name", "bad")
    assert str(issue) == "a.md name: bad" and str(RecipeError([issue])) == "a.md name: bad"


# --- files on disk ---------------------------------------------------------------------------


def test_it_loads_a_recipe_file_and_takes_its_kind_from_the_folder(tmp_path):
    folder = tmp_path / ".rysh" / "automations" / "tasks"
    folder.mkdir(parents=True)
    (folder / "digest.md").write_text(recipe("description: Daily digest\n"), encoding="utf-8")
    spec = load_recipe(folder / "digest.md")
    assert (spec.kind, spec.name, spec.description) == ("task", "digest", "Daily digest")
    assert spec.output_dir == "tasks/digest/results"
    assert spec.path == str(folder / "digest.md")


def test_it_refuses_unreadable_files_with_a_recipe_error(tmp_path):
    (tmp_path / "latin.md").write_bytes(b"caf\xe9")
    with pytest.raises(RecipeError, match="latin.md file: is not UTF-8 text"):
        load_recipe(tmp_path / "latin.md", kind="task")
    with pytest.raises(RecipeError, match="missing.md file: cannot be read"):
        load_recipe(tmp_path / "missing.md", kind="task")


# --- placeholders ----------------------------------------------------------------------------


def _spec(**changes) -> RecipeSpec:
    base = RecipeSpec(
        path="x.md", kind="task", name="x", prompt="p", args=("article_path", "tag"), output_dir="tasks/x/results"
    )
    return dataclasses.replace(base, **changes)


def test_it_lists_placeholders_once_in_order():
    assert placeholders("{{ b }} {{a}} {{b}} {{  arg1\t}} {{not valid}} {b}") == ["b", "a", "arg1"]


def test_it_renders_every_kind_of_placeholder():
    template = (
        "{{args}} | {{ arg1 }} | {{arg2}} | {{article_path}} | {{tag}} | "
        "{{output_dir}} | {{ results_dir }} | {{arg3}} | {{mystery}} | {{arg0}}"
    )
    out = render(template, spec=_spec(), args=["a.md", "{{tag}}"], output_dir="/r/x")
    assert out == ("a.md {{tag}} | a.md | {{tag}} | a.md | {{tag}} | /r/x | /r/x |  | {{mystery}} | {{arg0}}")


def test_it_renders_missing_arguments_as_empty():
    out = render("[{{args}}][{{tag}}][{{arg1}}]", spec=_spec(), args=[], output_dir="o")
    assert out == "[][][]"


def test_it_warns_about_placeholders_nothing_fills():
    spec = _spec(
        prompt="Post {{article_path}} with {{tag}} to {{output_dir}} and {{foo}}.",
        do=DoSpec(takeover_prompt="Save to {{results_dir}} {{bar}}"),
        loop_while=WhileSpec(until="{{args}} is live {{foo}}", iterate_with="{{arg3}} again"),
    )
    assert unfilled_placeholders(spec, None) == [
        "{{foo}} in prompt is not a known placeholder: nothing fills it",
        "{{bar}} in takeover_prompt is not a known placeholder: nothing fills it",
        "{{foo}} in until is not a known placeholder: nothing fills it",
    ]
    assert unfilled_placeholders(spec, ["a.md"]) == [
        '{{tag}} in prompt: no argument given, it becomes ""',
        "{{foo}} in prompt is not a known placeholder: nothing fills it",
        "{{bar}} in takeover_prompt is not a known placeholder: nothing fills it",
        "{{foo}} in until is not a known placeholder: nothing fills it",
        '{{arg3}} in iterate_with: no argument given, it becomes ""',
    ]
    assert '{{args}} in until: no argument given, it becomes ""' in unfilled_placeholders(spec, [])


# --- the output folder -----------------------------------------------------------------------


def test_it_resolves_the_default_output_dir_inside_the_root(tmp_path):
    spec = parse_recipe("Go.", path=".rysh/automations/webs/pub.md")
    assert resolve_output_dir(spec, tmp_path) == tmp_path.resolve() / "webs" / "pub" / "results"
    assert resolve_output_dir(_spec(output_dir=""), tmp_path) == (tmp_path.resolve() / "tasks" / "x" / "results")


@pytest.mark.parametrize("output_dir", ["../out", "a/../../out", "/etc"])
def test_it_refuses_output_dirs_outside_the_root(tmp_path, output_dir):
    root = tmp_path / "results"
    root.mkdir()
    with pytest.raises(RecipeError) as caught:
        resolve_output_dir(_spec(output_dir=output_dir), root)
    (issue,) = caught.value.issues
    assert (issue.path, issue.field) == ("x.md", "output_dir")
    assert "outside the results root" in issue.message and repr(output_dir) in issue.message


def test_it_refuses_a_symlink_that_leads_out_of_the_root(tmp_path):
    root, outside = tmp_path / "results", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "escape").symlink_to(outside, target_is_directory=True)
    with pytest.raises(RecipeError, match="through a symbolic link") as caught:
        resolve_output_dir(_spec(output_dir="escape/results"), root)
    assert caught.value.issues[0].field == "output_dir"


def test_it_follows_a_symlink_that_stays_inside_the_root(tmp_path):
    root = tmp_path / "results"
    (root / "real").mkdir(parents=True)
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    assert resolve_output_dir(_spec(output_dir="alias/x"), root) == root.resolve() / "real" / "x"


def test_it_accepts_a_symlinked_results_root(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    got = resolve_output_dir(_spec(output_dir="a"), tmp_path / "link")
    assert got == (tmp_path / "real").resolve() / "a"


# --- properties: nothing but RecipeSpec or RecipeError ---------------------------------------

_KEYS = [
    "description",
    "kind",
    "web_profile",
    "url",
    "web_read",
    "record",
    "args",
    "output_dir",
    "schedule",
    "loop",
    "step",
    "approve",
    "allowed_domains",
    "model",
    "judge_model",
    "do",
    "while",
    "interval",
    "max_iterations",
    "max_duration",
    "auto_continue",
    "budget",
    "size",
    "watch",
    "takeover_when",
    "takeover_prompt",
    "enabled",
    "prompts",
    "until",
    "iterate_with",
    "<<",
    "? [a]",
    "&a x",
    "*a",
    "budgt",
]
_VALUES = [
    "",
    "0",
    "-1",
    "5",
    "99",
    "500",
    "1e999",
    ".inf",
    ".nan",
    "true",
    "yes",
    "off",
    "~",
    "4b",
    "1.5b",
    "0b",
    "15m",
    "0m",
    "[a, b]",
    "{size: 3b}",
    "[",
    "]",
    "{",
    "&a",
    "*a",
    "&a [*a]",
    "'@daily'",
    "@daily",
    "0 7 * * *",
    "2020-02-30",
    "!!python/object:x {}",
    "!custom 3",
    "|",
    ">",
    "'quoted'",
    '"\\x00"',
    "../..",
    "/etc",
    "{{args}}",
    "<<: *a",
    "1" * 5000,
    "[[[[[[[[[[]]]]]]]]]]",
    "\t",
    "---",
    "...",
]

_printable = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=20)
_line = st.builds(
    lambda indent, key, value, dash: " " * indent + ("- " if dash else "") + f"{key}: {value}",
    st.integers(0, 8),
    st.sampled_from(_KEYS),
    st.one_of(st.sampled_from(_VALUES), _printable),
    st.booleans(),
)
_yamlish = st.lists(st.one_of(_line, _line, _line, st.text(max_size=20)), max_size=12).map("\n".join)

# Well-formed YAML trees built from the schema's own keys, so the checks behind the
# syntax (types, ranges, nesting) are reached, not only the YAML parser.
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True),
    st.sampled_from(
        [
            "4b",
            "1.5b",
            "0p",
            "15m",
            "1h30m",
            "@daily",
            "off",
            "0 7 * * *",
            "x.example",
            "https://a.example",
            "../x",
            "web",
            "task",
            "text",
        ]
    ),
    _printable,
)
_trees = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_KEYS[:-5]), inner, max_size=5)
    ),
    max_leaves=25,
)
_frontmatters = st.dictionaries(st.sampled_from(_KEYS[:-5]), _trees, max_size=8).map(
    lambda tree: yaml.safe_dump(tree, default_flow_style=False, allow_unicode=True)
)
_paths = st.sampled_from([WEB, TASK, "x.md", "Bad Name.md", "", ".rysh/automations/other/x.md"])


def _parses_or_refuses(text: str, path: str, kind: str | None = None) -> None:
    try:
        spec = parse_recipe(text, path=path, kind=kind)
    except RecipeError as exc:
        assert exc.issues and all(isinstance(i, RecipeIssue) for i in exc.issues)
        assert all(i.line is None or i.line >= 1 for i in exc.issues)
    else:
        assert isinstance(spec, RecipeSpec) and spec.prompt and NAME_RE.match(spec.name)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(), _paths, st.sampled_from([None, "web", "task", "robot"]))
def test_it_never_raises_anything_but_recipe_error_for_arbitrary_text(text, path, kind):
    _parses_or_refuses(text, path, kind)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_yamlish, st.text(max_size=40), _paths, st.sampled_from(["---", "...", ""]))
def test_it_never_raises_anything_but_recipe_error_for_yamlish_frontmatter(frontmatter, body, path, fence):
    _parses_or_refuses(f"---\n{frontmatter}\n{fence}\n{body}", path)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_frontmatters, _paths)
def test_it_never_raises_anything_but_recipe_error_for_schema_shaped_yaml(frontmatter, path):
    _parses_or_refuses(f"---\n{frontmatter}---\nGo.\n", path)


def test_a_task_recipe_may_name_allowed_domains_for_http_get():
    spec = parse_recipe(recipe("allowed_domains: [API.example.com, '*.example.org']\n"), path=TASK)
    assert spec.kind == "task" and spec.allowed_domains == ("api.example.com", "*.example.org")


@pytest.mark.parametrize(
    ("value", "seconds", "error"),
    [
        ("2h", 7200, None),
        ("90s", 90, None),
        ("30s", None, "expected a duration from 1m to 7d, got '30s'"),
        ("8d", None, "expected a duration"),
        ("soon", None, "expected a duration such as 90s, 7m or 1h30m, got 'soon'"),
    ],
)
def test_approve_timeout_is_a_duration_from_a_minute_to_a_week(value, seconds, error):
    text = recipe(f"approve: ['click:Publish*']\napprove_timeout: {value}\n")
    if error is None:
        assert parse_recipe(text, path=WEB).approve_timeout == seconds
        return
    with pytest.raises(RecipeError) as raised:
        parse_recipe(text, path=WEB)
    assert f"x.md:3 approve_timeout: {error}" in str(raised.value)
