"""The CLI's audit actor is the account of the process's real user id: $USER and $LOGNAME, which
anyone can set, do not change whose name a row carries."""

import os
import pwd
from io import StringIO

import pytest
from django.core.management import call_command

from audit.context import cli_actor_name
from audit.models import AuditEntry

pytestmark = pytest.mark.django_db

REAL = pwd.getpwuid(os.getuid()).pw_name


@pytest.fixture
def forged(monkeypatch):
    for name in ("USER", "LOGNAME", "LNAME", "USERNAME"):
        monkeypatch.setenv(name, "alice")


def test_it_names_the_real_user_id_not_the_environment(forged):
    assert REAL != "alice"
    assert cli_actor_name() == f"cli:{REAL}"


def test_it_names_the_number_when_the_user_id_has_no_account(forged, monkeypatch):
    def no_entry(uid):
        raise KeyError(uid)

    monkeypatch.setattr("audit.context.pwd.getpwuid", no_entry)
    assert cli_actor_name() == f"cli:uid{os.getuid()}"


def test_it_records_a_cli_action_under_the_real_account(forged, recipe_file):
    path = recipe_file("---\nloop:\n  do:\n    budget:\n      size: 20p\n---\nWork.\n", "notes")
    call_command("auto", "task", "run", str(path), "--provider", "scripted", stdout=StringIO())
    row = AuditEntry.objects.get(action="run.start")
    assert (row.actor_name, row.source) == (f"cli:{REAL}", "cli")
