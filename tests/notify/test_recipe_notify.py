"""`notify:` in a recipe (docs/notifications.md): its shape and events by the pure reader; its channels
against the database at sync, `auto check` and the editor's live check."""

from __future__ import annotations

import textwrap
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from catalogue.recipe import RecipeError, parse_recipe
from catalogue.spec import NotifyRule
from catalogue.sync import parse_version
from notify import services
from tests.recipes_git import login, make_user

PATH = ".rysh/automations/tasks/job.md"


def recipe(frontmatter: str) -> str:
    return f"---\n{textwrap.dedent(frontmatter).strip()}\n---\nDo the thing.\n"


GOOD = recipe(
    """
    notify:
      - channel: ops
        events: [run.ended, budget.80]
      - {channel: team-mail, events: [approval.waiting]}
    """
)


def issues(text: str) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, path=PATH)
    return [str(i) for i in caught.value.issues]


def test_it_reads_notify_entries_with_their_lines():
    spec = parse_recipe(GOOD, path=PATH)
    assert spec.notify == (
        NotifyRule(channel="ops", events=("run.ended", "budget.80"), line=3),
        NotifyRule(channel="team-mail", events=("approval.waiting",), line=5),
    )


@pytest.mark.parametrize(
    "front, expected",
    [
        (
            "notify:\n  - channel: ops\n    events: [run.ended, run.exploded]\n",
            "job.md:4 notify.events: expected one of run.ended, approval.waiting, budget.50, budget.80, budget.95, "
            "run.paused, schedule.disabled, change.opened, change.approved, change.conflict, eval.failed, "
            "got 'run.exploded'",
        ),
        (
            "notify: ops\n",
            "job.md:2 notify: expected a list of {channel: NAME, events: [...]} entries, or rysh's {channel: NAME, to: ADDRESS}, got 'ops'",
        ),
        ("notify:\n  - ops\n", "job.md:3 notify: expected a mapping with keys channel, events, got 'ops'"),
        (
            "notify:\n  - channel: ops\n",
            "job.md:3 notify: expected an entry with channel and events, got one without events",
        ),
        (
            "notify:\n  - {channel: ops, events: run.ended}\n",
            "job.md:3 notify.events: expected a list of event names, got 'run.ended'",
        ),
        (
            "notify:\n  - {channel: Ops!, events: [run.ended]}\n",
            "job.md:3 notify.channel: expected a channel name (lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit), got 'Ops!'",
        ),
        (
            "notify:\n  - {channel: ops, events: []}\n",
            "job.md:3 notify.events: expected at least one event, got a list",
        ),
        ("notify:\n  - {channel: ops, events: [run.ended], when: now}\n", "job.md:3 notify.when: unknown key 'when'"),
    ],
)
def test_it_refuses_a_broken_notify_precisely(front, expected):
    assert expected in issues(recipe(front))


# -- channels need the database -----------------------------------------------------------------


@pytest.mark.django_db
def test_sync_refuses_a_recipe_naming_an_unknown_channel():
    services.channel_save(user=None, name="ops", kind="email", recipients="a@example.com")
    parsed = parse_version(GOOD, path=PATH, kind="task", name="job")
    assert parsed["valid"] is False
    assert parsed["errors"] == ["job.md:5 notify.channel: expected a configured channel (ops), got 'team-mail'"]
    services.channel_save(user=None, name="team-mail", kind="email", recipients="b@example.com")
    assert parse_version(GOOD, path=PATH, kind="task", name="job")["valid"] is True


@pytest.mark.django_db
def test_auto_check_refuses_an_unknown_channel(tmp_path, settings):
    folder = tmp_path / ".rysh/automations/tasks"
    folder.mkdir(parents=True)
    (folder / "job.md").write_text(GOOD)
    settings.RYSH_RECIPES_REPO = str(tmp_path)
    err = StringIO()
    with pytest.raises(CommandError, match="2 error"):
        call_command("auto", "task", "check", str(folder / "job.md"), stdout=StringIO(), stderr=err)
    assert "job.md:3 notify.channel: expected a configured channel (none yet" in err.getvalue()
    services.channel_save(user=None, name="ops", kind="email", recipients="a@example.com")
    services.channel_save(user=None, name="team-mail", kind="email", recipients="b@example.com")
    out = StringIO()
    call_command("auto", "task", "check", str(folder / "job.md"), stdout=out, stderr=StringIO())
    assert "ok: task/job is valid" in out.getvalue()


@pytest.mark.django_db
def test_the_editors_live_check_shows_an_unknown_channel_at_its_line(client):
    login(client, make_user("grace", role="editor"))
    part = client.post("/recipes/validate/", {"kind": "task", "name": "job", "text": GOOD}).content.decode()
    assert 'data-line="3"' in part and 'data-line="5"' in part
    assert "<code>notify.channel</code>: expected a configured channel" in part
    services.channel_save(user=None, name="ops", kind="email", recipients="a@example.com")
    services.channel_save(user=None, name="team-mail", kind="email", recipients="b@example.com")
    part = client.post("/recipes/validate/", {"kind": "task", "name": "job", "text": GOOD}).content.decode()
    assert "<strong>valid</strong>" in part
