"""Every action a person takes is one audit row, from the web (the request's user and
address) and from the CLI (`cli:<os user>`, no address): recorded in the services, so both
share one call."""

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.utils import timezone

from audit.context import CLI, WEB, audit_context, current
from audit.models import AuditEntry
from catalogue.sync import recipes_sync
from reviews.models import ChangeRequest
from reviews.services import change_request_open
from runs.models import Approval, Run, RunState
from tests.conftest import SCRIPT
from tests.recipes_git import recipe_text, work  # noqa: F401
from tests.runs.test_view_approvals import waiting  # noqa: F401
from tests.runs.test_view_runs import client_for, user_with

pytestmark = pytest.mark.django_db

ONE_PASS = "---\nloop:\n  do:\n    budget:\n      size: 20p\n---\nWork.\n"
ADDRESS = "203.0.113.9"
ACCOUNT_ROWS = r"^(role|user|group|auth)\."


def auto(*args) -> str:
    out = StringIO()
    call_command("auto", *args, stdout=out)
    return out.getvalue()


def rows(prefix: str = "") -> list[tuple]:
    """(action, who, source, address, target) of every row but those about accounts (roles, users,
    groups, logins: the fixtures make and log in users), oldest first."""
    entries = AuditEntry.objects.exclude(action__regex=ACCOUNT_ROWS).filter(action__startswith=prefix)
    return list(entries.order_by("id").values_list("action", "actor_name", "source", "address", "target_label"))


@pytest.fixture(autouse=True)
def os_user(monkeypatch):
    monkeypatch.setattr("audit.context.os_user", lambda: "ops")


@pytest.fixture
def operator():
    return client_for(user_with("operator"))


def _running(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(state=RunState.RUNNING, phase="task", control="")


def _queued(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(state=RunState.QUEUED, phase="", control="")


# -- the context ---------------------------------------------------------------------------------


def test_it_sets_the_context_for_a_request_and_clears_it_after():
    seen = []
    with audit_context(source=CLI, actor_name="cli:ops"):
        seen.append(current().source)
        with audit_context(source=WEB, address="::1"):
            seen.append(current().address)
        seen.append(current().address)
    assert seen == ["cli", "::1", None] and current() is None


def test_it_records_system_rows_outside_a_request_or_command():
    User.objects.create_user("ada").groups.add(Group.objects.get_or_create(name="editor")[0])
    row = AuditEntry.objects.get(action="role.add")
    assert (row.actor, row.actor_name, row.source, row.address) == (None, "", "system", None)
    assert row.target_label.endswith(" ada") and row.detail == {"groups": ["editor"]}


def test_it_takes_the_address_from_remote_addr_and_never_from_x_forwarded_for(start, operator):
    run = start(ONE_PASS)
    operator.post(f"/runs/{run.pk}/stop/", REMOTE_ADDR=ADDRESS, HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert rows() == [
        ("run.start", "", "system", None, f"run #{run.pk} task/job"),  # the fixture called the service
        ("run.stop", "operator-user", "web", ADDRESS, f"run #{run.pk} task/job"),
    ]


# -- the run controls ------------------------------------------------------------------------------


@pytest.fixture
def catalogued(work, settings, tmp_path):  # noqa: F811
    work.commit("Digest", tasks__digest="---\nloop:\n  do:\n    budget:\n      size: 20p\n---\nDigest.\n")
    (work.path / ".rysh/automations/tasks/digest.script.yaml").write_text(SCRIPT)
    settings.RYSH_PROVIDER = "scripted"
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    recipes_sync()
    return "/recipes/task/digest/run/"


def test_it_records_each_run_control_from_the_web(catalogued, operator):
    post = lambda action, run: operator.post(f"/runs/{run.pk}/{action}/", REMOTE_ADDR=ADDRESS)  # noqa: E731
    assert operator.post(catalogued, {"headless": "on"}, REMOTE_ADDR=ADDRESS).status_code == 302
    run = Run.objects.get()
    post("cancel", run)
    post("continue", run)
    _running(run)
    post("land", run)
    _queued(run)
    post("stop", run)
    post("resume", run)
    new = Run.objects.exclude(pk=run.pk).get()
    label = f"run #{run.pk} task/digest"
    assert rows() == [
        ("run.start", "operator-user", "web", ADDRESS, label),
        ("run.cancel", "operator-user", "web", ADDRESS, label),
        ("run.continue", "operator-user", "web", ADDRESS, label),
        ("run.land", "operator-user", "web", ADDRESS, label),
        ("run.stop", "operator-user", "web", ADDRESS, label),
        ("run.resume", "operator-user", "web", ADDRESS, f"run #{new.pk} task/digest"),
    ]
    assert AuditEntry.objects.get(action="run.resume").detail == {"resumes": run.pk}
    assert AuditEntry.objects.get(action="run.start").actor.username == "operator-user"


def test_it_records_each_run_control_from_the_cli(recipe_file):
    path = recipe_file(ONE_PASS, "notes")
    auto("task", "run", str(path), "--provider", "scripted")
    run = Run.objects.get()
    auto("task", "cancel", "notes")
    auto("task", "continue", f"#{run.pk}")
    _running(run)
    auto("task", "land", "notes")
    _queued(run)
    auto("task", "stop", "notes")
    auto("task", "resume", "notes", "--provider", "scripted")
    new = Run.objects.exclude(pk=run.pk).get()
    label = f"run #{run.pk} task/notes"
    assert rows() == [
        ("run.start", "cli:ops", "cli", None, label),
        ("run.cancel", "cli:ops", "cli", None, label),
        ("run.continue", "cli:ops", "cli", None, label),
        ("run.land", "cli:ops", "cli", None, label),
        ("run.stop", "cli:ops", "cli", None, label),
        ("run.resume", "cli:ops", "cli", None, f"run #{new.pk} task/notes"),
    ]
    assert all(e.actor is None for e in AuditEntry.objects.all())


def test_it_records_no_row_for_a_refused_control_or_a_dry_run(recipe_file, start, operator):
    path = recipe_file(ONE_PASS, "notes")
    auto("task", "run", str(path), "--dry-run")
    run = start(ONE_PASS)
    operator.post(f"/runs/{run.pk}/land/")  # queued: nothing to land
    assert [r[0] for r in rows()] == ["run.start"]


# -- approvals -------------------------------------------------------------------------------------


def _another_approval(run: Run) -> Approval:
    return Approval.objects.create(
        run=run,
        pass_number=1,
        step_number=3,
        tool_name="click",
        tool_input={"text": "Publish"},
        pattern="click:Publish*",
        expires_at=timezone.now() + timedelta(minutes=5),
    )


def test_it_records_approvals_from_the_web_and_the_cli(waiting, operator):  # noqa: F811
    run, _, approval = waiting
    operator.post(f"/runs/{run.pk}/approvals/{approval.pk}/approve/", {"reason": "fine"}, REMOTE_ADDR=ADDRESS)
    second = _another_approval(run)
    auto("web", "reject", f"#{run.pk}", "too", "risky")
    label = f"run #{run.pk} task/job"
    assert rows("approval.") == [
        ("approval.approve", "operator-user", "web", ADDRESS, label),
        ("approval.reject", "cli:ops", "cli", None, label),
    ]
    details = [e.detail for e in AuditEntry.objects.filter(action__startswith="approval.").order_by("id")]
    assert details == [
        {"approval": approval.pk, "call": "click(text='Publish')", "reason": "fine"},
        {"approval": second.pk, "call": "click(text='Publish')", "reason": "too risky"},
    ]


# -- schedules, profiles ----------------------------------------------------------------------------


def test_it_records_schedule_add_enable_disable_and_remove_from_the_cli(recipe_file):
    recipe_file(ONE_PASS, "job")
    auto("task", "schedule", "add", "nightly", "@daily", "job", "--tz", "UTC")
    auto("task", "schedule", "disable", "nightly")
    auto("task", "schedule", "enable", "nightly")
    auto("task", "schedule", "rm", "nightly")
    assert [(a, who, src) for a, who, src, _, _ in rows("schedule.")] == [
        ("schedule.add", "cli:ops", "cli"),
        ("schedule.disable", "cli:ops", "cli"),
        ("schedule.enable", "cli:ops", "cli"),
        ("schedule.remove", "cli:ops", "cli"),
    ]
    add = AuditEntry.objects.get(action="schedule.add")
    assert add.target_type == "schedule" and add.target_label == "schedule nightly (task/job)"
    assert add.detail == {"when": "@daily", "tz": "UTC", "args": []}


def test_it_records_a_profile_deleted_from_the_dashboard(settings, tmp_path, operator):
    settings.RYSH_PROFILES_DIR = tmp_path / "profiles"
    (tmp_path / "profiles" / "shop").mkdir(parents=True)
    operator.post("/profiles/shop/delete/", REMOTE_ADDR=ADDRESS)
    operator.post("/profiles/shop/delete/", REMOTE_ADDR=ADDRESS)  # gone: refused, not recorded
    assert rows() == [("profile.delete", "operator-user", "web", ADDRESS, "browser profile shop")]


# -- recipes and change requests ----------------------------------------------------------------------


def test_it_records_recipe_saves_and_change_request_decisions(work, client):  # noqa: F811
    recipes_sync()
    grace, linus = user_with("editor"), User.objects.create_user("linus", password="x")
    linus.groups.add(Group.objects.get(name="editor"))
    editor = client_for(grace)
    editor.post(
        "/recipes/task/report/edit/",
        {"text": recipe_text("bigger", size="5b"), "message": "Bigger"},
        REMOTE_ADDR=ADDRESS,
    )
    change = ChangeRequest.objects.get()
    reviewer = client_for(linus)
    reviewer.post(f"/changes/{change.pk}/comment/", {"body": "Looks good"}, REMOTE_ADDR=ADDRESS)
    reviewer.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, REMOTE_ADDR=ADDRESS)
    other = change_request_open(user=grace, kind="task", name="report", text=recipe_text("smaller", size="3b"))
    editor.post(f"/changes/{other.pk}/close/", REMOTE_ADDR=ADDRESS)
    assert [(a, who, src, addr) for a, who, src, addr, _ in rows()] == [
        ("recipe.save", "editor-user", "web", ADDRESS),
        ("change.comment", "linus", "web", ADDRESS),
        ("change.approve", "linus", "web", ADDRESS),
        ("recipe.save", "editor-user", "system", None),  # the service, called with no request
        ("change.close", "editor-user", "web", ADDRESS),
    ]
    approve = AuditEntry.objects.get(action="change.approve")
    assert approve.target_type == "change" and approve.target_label == f"change request #{change.pk} task/report"
    assert approve.detail == {"head": change.head_sha, "outcome": "merged"}


# -- roles -------------------------------------------------------------------------------------------


def test_it_records_role_changes_made_in_the_admin_with_who_and_where(client):
    root = User.objects.create_superuser("root", password="x")
    bob = User.objects.create_user("bob", password="x")
    operator_group = Group.objects.get_or_create(name="operator")[0]
    client.force_login(root)
    form = {
        "username": "bob",
        "is_active": "on",
        "is_superuser": "on",
        "groups": [operator_group.pk],
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
    }
    response = client.post(f"/admin/auth/user/{bob.pk}/change/", form, REMOTE_ADDR=ADDRESS)
    assert response.status_code == 302, response.content.decode()[:2000]
    changes = AuditEntry.objects.filter(target_id=str(bob.pk), source="web").order_by("id")
    assert sorted((e.action, e.actor_name, e.address, str(e.detail)) for e in changes) == [
        ("role.add", "root", ADDRESS, "{'groups': ['operator']}"),
        ("role.add", "root", ADDRESS, "{'superuser': True}"),
    ]
    form.pop("is_superuser")
    form["groups"] = []
    client.post(f"/admin/auth/user/{bob.pk}/change/", form, REMOTE_ADDR=ADDRESS)
    removed = AuditEntry.objects.filter(target_id=str(bob.pk), action="role.remove").order_by("id")
    assert sorted(str(e.detail) for e in removed) == ["{'groups': ['operator']}", "{'superuser': False}"]


def test_it_records_a_user_added_from_the_group_side_and_a_cleared_group():
    group = Group.objects.get_or_create(name="admin")[0]
    carol = User.objects.create_user("carol")
    group.user_set.add(carol)
    carol.groups.clear()
    entries = AuditEntry.objects.filter(action__startswith="role.").order_by("id")
    assert [(e.action, e.target_label.split()[-1], e.detail) for e in entries] == [
        ("role.add", "carol", {"groups": ["admin"]}),
        ("role.remove", "carol", {"groups": ["admin"]}),
    ]


def test_it_records_nothing_when_a_login_saves_last_login():
    user = User.objects.create_user("dave", password="x")
    before = AuditEntry.objects.count()
    user.last_login = timezone.now()
    user.save(update_fields=["last_login"])
    assert AuditEntry.objects.count() == before


# -- grants, channels, the CLI's profile rm ---------------------------------------------------------


def test_it_records_notification_channel_changes_without_their_secrets():
    from notify.models import Channel

    admin = client_for(User.objects.create_superuser("root", password="x"))
    url = "http://127.0.0.1:9/hook?token=very-secret"
    admin.post("/notifications/", {"name": "hook", "kind": "webhook", "url": url, "enabled": "on"}, REMOTE_ADDR=ADDRESS)
    channel = Channel.objects.get()
    admin.post(f"/notifications/{channel.pk}/", {"name": "hook", "kind": "webhook", "url": ""}, REMOTE_ADDR=ADDRESS)
    admin.post(f"/notifications/{channel.pk}/delete/", REMOTE_ADDR=ADDRESS)
    assert rows("notify.") == [
        ("notify.channel.add", "root", "web", ADDRESS, "channel hook"),
        ("notify.channel.change", "root", "web", ADDRESS, "channel hook"),
        ("notify.channel.remove", "root", "web", ADDRESS, "channel hook"),
    ]
    stored = str(list(AuditEntry.objects.values_list("detail", flat=True)))
    assert "very-secret" not in stored and channel.secret not in stored


def test_it_records_a_grant_from_the_web_and_the_cli(start, operator):
    from tests.runs.test_grant import ended_at_the_pass_cap

    run = ended_at_the_pass_cap(start)
    operator.post(f"/runs/{run.pk}/grant/", {"passes": "1"}, REMOTE_ADDR=ADDRESS)
    Run.objects.filter(pk=run.pk).update(state=RunState.FINISHED, cause="unfulfilled: the 3-pass cap is reached")
    auto("task", "grant", f"#{run.pk}", "--passes", "1")
    assert rows("run.grant") == [
        ("run.grant", "operator-user", "web", ADDRESS, f"run #{run.pk} task/job"),
        ("run.grant", "cli:ops", "cli", None, f"run #{run.pk} task/job"),
    ]


def test_it_records_a_profile_removed_from_the_cli(settings, tmp_path):
    settings.RYSH_PROFILES_DIR = tmp_path / "profiles"
    (tmp_path / "profiles" / "shop").mkdir(parents=True)
    auto("web", "profile", "rm", "shop")
    assert rows("profile.") == [("profile.delete", "cli:ops", "cli", None, "browser profile shop")]
