"""rysh's `notify: {channel, to, humanoid}` (docs/notifications.md): the run's outcome when it ends,
through a channel registered here, to the recipe's own recipients where the channel's kind takes
them; `humanoid:` is rysh's and is said to be unsupported at its line."""

from __future__ import annotations

import textwrap
from io import StringIO

import pytest
from django.core import mail
from django.core.management import CommandError, call_command

from catalogue.recipe import RecipeError, parse_recipe
from catalogue.spec import NotifyRule
from catalogue.sync import parse_version
from notify import services
from notify.models import Delivery
from tests.conftest import ONE_PASS, drive
from tests.fake_model import FakeModel, tool

PATH = ".rysh/automations/tasks/job.md"


def recipe(frontmatter: str) -> str:
    return f"---\n{textwrap.dedent(frontmatter).strip()}\n---\nDo the thing.\n"


def issues(text: str) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, path=PATH)
    return [str(i) for i in caught.value.issues]


MAPPING = recipe("notify:\n  channel: team-mail\n  to: lead@example.com, qa@example.com\n")


def test_it_reads_the_mapping_as_a_run_ended_rule_with_its_recipients():
    spec = parse_recipe(MAPPING, path=PATH)
    assert spec.notify == (
        NotifyRule(
            channel="team-mail", events=("run.ended",), line=3, to="lead@example.com, qa@example.com", to_line=4
        ),
    )


def test_a_mapping_without_to_keeps_the_channels_recipients():
    [rule] = parse_recipe(recipe("notify: {channel: ops}"), path=PATH).notify
    assert (rule.channel, rule.events, rule.to) == ("ops", ("run.ended",), None)


def test_humanoid_beside_a_channel_is_a_warning_at_its_line():
    spec = parse_recipe(recipe("notify:\n  channel: ops\n  humanoid: assistant\n"), path=PATH)
    [warning] = spec.warnings
    assert warning.startswith("job.md:4 notify.humanoid: is ignored") and "name it with channel:" in warning


@pytest.mark.parametrize(
    "front, expected",
    [
        (
            "notify:\n  humanoid: assistant\n",
            "job.md:3 notify.humanoid: a humanoid cannot be notified here: humanoids are rysh's; this dashboard "
            "sends through channels an admin registers on the Notifications page: register one there and name it "
            "with channel:",
        ),
        ("notify:\n  to: a@example.com\n", "job.md:3 notify: expected channel: NAME"),
        ("notify:\n  channel: ops\n  to: ''\n", "job.md:4 notify.to: expected the recipients on one line"),
        ("notify:\n  channel: ops\n  to: [a@example.com]\n", "job.md:4 notify.to: expected the recipients"),
        ("notify:\n  channel: Ops\n", "job.md:3 notify.channel: expected a channel name"),
        ("notify:\n  channel: ops\n  events: [run.ended]\n", "job.md:4 notify.events: unknown key 'events'"),
    ],
)
def test_it_refuses_a_broken_mapping_at_its_line(front, expected):
    found = issues(recipe(front))
    assert any(issue.startswith(expected) for issue in found), found


# -- what needs the database ----------------------------------------------------------------------


@pytest.mark.django_db
def test_to_on_a_channel_that_cannot_take_it_is_an_error_at_the_to_line():
    services.channel_save(user=None, name="team-mail", kind="webhook", url="http://127.0.0.1:9/x")
    parsed = parse_version(MAPPING, path=PATH, kind="task", name="job")
    assert parsed["errors"] == [
        "job.md:4 notify.to: channel 'team-mail' is a webhook channel, which sends to its own address: "
        "to: applies to email channels only; remove to: or name such a channel"
    ]


@pytest.mark.django_db
def test_to_that_is_no_email_address_is_an_error_for_an_email_channel():
    services.channel_save(user=None, name="ops", kind="email", recipients="a@example.com")
    parsed = parse_version(recipe("notify: {channel: ops, to: nobody}"), path=PATH, kind="task", name="job")
    assert parsed["errors"] == ["job.md:2 notify.to: expected email addresses: 'nobody' is not an email address"]


@pytest.mark.django_db
def test_auto_check_says_where_the_to_is_wrong(tmp_path, settings):
    folder = tmp_path / ".rysh/automations/tasks"
    folder.mkdir(parents=True)
    (folder / "job.md").write_text(MAPPING)
    settings.RYSH_RECIPES_REPO = str(tmp_path)
    services.channel_save(user=None, name="team-mail", kind="slack", url="https://hooks.slack.com/services/T/B/C")
    err = StringIO()
    with pytest.raises(CommandError, match="1 error"):
        call_command("auto", "task", "check", str(folder / "job.md"), stdout=StringIO(), stderr=err)
    assert "job.md:4 notify.to: channel 'team-mail' is a slack channel" in err.getvalue()


def saving_model():
    return FakeModel(
        task=[
            {"text": "saving", "tools": [tool("save_result", filename="summary.md", content="the summary")]},
            {"text": "All saved."},
        ]
    )


MAPPED_RUN = ONE_PASS.replace(
    "    loop:\n", "    notify:\n      channel: team-mail\n      to: lead@example.com, qa@example.com\n    loop:\n", 1
)


@pytest.mark.django_db
def test_the_run_ended_mail_goes_to_the_recipes_recipients(start, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    channel, _ = services.channel_save(user=None, name="team-mail", kind="email", recipients="all@example.com")
    run = drive(start(MAPPED_RUN), saving_model())
    [delivery] = Delivery.objects.all()
    assert (delivery.event, delivery.to) == ("run.ended", "lead@example.com, qa@example.com")
    services.deliver(delivery.pk)
    [message] = mail.outbox
    assert message.to == ["lead@example.com", "qa@example.com"]
    assert f"run #{run.pk}" in message.subject
    channel.refresh_from_db()
    assert channel.recipient_list == ["all@example.com"]  # the channel itself is unchanged


@pytest.mark.django_db
def test_without_to_the_mail_goes_to_the_channels_recipients(start, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    services.channel_save(user=None, name="team-mail", kind="email", recipients="all@example.com")
    drive(start(MAPPED_RUN.replace("      to: lead@example.com, qa@example.com\n", "")), saving_model())
    services.deliver(Delivery.objects.get().pk)
    assert [m.to for m in mail.outbox] == [["all@example.com"]]
