"""seed_demo's logins: one random password per demo user, kept in DATA_DIR/demo-login (0600)."""

import re
import stat

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from catalogue.management.commands import seed_demo

pytestmark = pytest.mark.django_db
ROLES = {"demo": "admin", "reviewer": "editor", "operator": "operator", "viewer": "viewer"}
NAMES = list(ROLES)


@pytest.fixture
def data(settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(seed_demo.Command, "_sync", lambda self: None)  # the logins only
    monkeypatch.setattr(seed_demo.Command, "_seed_repository", lambda self, repo: None)
    # these tests try passwords with a bare authenticate(), no request and many on purpose wrong:
    # the login throttle (which needs a request) is tests/test_login_throttle.py's business
    settings.AXES_ENABLED = False
    return tmp_path


def seed(capsys) -> str:
    call_command("seed_demo")
    return capsys.readouterr().out


def printed(out: str) -> dict[str, str]:
    return dict(re.findall(r"login:\s+(\S+) / (\S+)", out))


def remembered(data) -> dict[str, str]:
    """As tests/e2e/stack.py reads it: `name / PASSWORD   (role)` lines."""
    return dict(re.findall(r"(?m)^\s*(\S+) / (\S+)", (data / "demo-login").read_text()))


def assert_each_logs_in_only_as_itself(logins: dict[str, str]) -> None:
    assert sorted(logins) == sorted(NAMES)
    assert len(set(logins.values())) == len(logins), "two demo users share a password"
    for owner, password in logins.items():
        for name in NAMES:
            user = authenticate(username=name, password=password)
            assert (user is not None) == (name == owner), f"{owner}'s password vs {name}"


def test_each_demo_login_gets_its_own_password_printed_and_remembered(data, capsys):
    out = seed(capsys)
    assert stat.S_IMODE((data / "demo-login").stat().st_mode) == 0o600
    assert printed(out) == remembered(data)
    assert_each_logs_in_only_as_itself(printed(out))
    assert get_user_model().objects.get(username="demo").is_superuser
    assert {g.name for g in Group.objects.filter(user__username="viewer")} == {"viewer"}


def test_a_rerun_keeps_the_passwords_and_prints_none(data, capsys):
    first = seed(capsys)
    again = seed(capsys)
    assert printed(again) == {}
    assert "demo, reviewer, operator, viewer: passwords unchanged" in again
    assert remembered(data) == printed(first)
    assert_each_logs_in_only_as_itself(printed(first))


def test_a_rerun_gives_demo_users_that_share_one_password_their_own(data, capsys):
    """What an older seed_demo left: one password for all, in a 0644 file."""
    User = get_user_model()
    shared = "one-for-all-2024"
    User.objects.create_superuser("demo", "demo@rysh.invalid", shared)
    for name in ("reviewer", "operator", "viewer"):
        User.objects.create_user(name, f"{name}@rysh.invalid", shared).groups.add(
            Group.objects.get_or_create(name=ROLES[name])[0]
        )
    (data / "demo-login").write_text("".join(f"{name} / {shared}   ({role})\n" for name, role in ROLES.items()))
    (data / "demo-login").chmod(0o644)

    out = seed(capsys)
    logins = remembered(data)
    assert_each_logs_in_only_as_itself(logins)
    assert stat.S_IMODE((data / "demo-login").stat().st_mode) == 0o600
    assert logins["viewer"] == shared  # the least privileged keeps it: nobody is locked out for nothing
    assert printed(out) == {name: logins[name] for name in ("demo", "reviewer", "operator")}
    assert authenticate(username="demo", password=shared) is None


def test_a_password_changed_by_its_user_is_kept_and_not_printed_stale(data, capsys):
    seed(capsys)
    viewer = get_user_model().objects.get(username="viewer")
    viewer.set_password("my-own-choice-77")
    viewer.save()
    out = seed(capsys)
    assert printed(out) == {}
    assert authenticate(username="viewer", password="my-own-choice-77") is not None
    assert "viewer" not in remembered(data)
    assert "viewer   (viewer; password changed since seeding" in (data / "demo-login").read_text()


def test_no_demo_login_beside_a_real_team(data, capsys):
    get_user_model().objects.create_user("alice", password="alice-has-hers-9")
    out = seed(capsys)
    assert "login:" not in out and not (data / "demo-login").exists()
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["alice"]
