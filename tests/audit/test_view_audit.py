"""The audit page (`/audit/`), its CSV export, who may read them, and a run's own entries on
its page (Django test client)."""

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from audit.context import CLI, WEB, audit_context
from audit.models import AuditEntry
from audit.services import audit_record
from tests.runs.test_view_runs import client_for, user_with

pytestmark = pytest.mark.django_db

ONE_PASS = "---\nloop:\n  do:\n    budget:\n      size: 20p\n---\nWork.\n"


@pytest.fixture
def log():
    """Three rows: alice stops run 12 on the web, the CLI schedules, bob's hostile comment."""
    alice = User.objects.create_user("alice")
    with audit_context(source=WEB, address="203.0.113.9"):
        audit_record(actor=alice, action="run.stop", target=("run", 12, "run #12 task/notes"))
    with audit_context(source=CLI, actor_name="cli:ops"):
        audit_record(action="schedule.add", target=("schedule", 3, "schedule nightly (task/notes)"))
    bob = User.objects.create_user("bob")
    with audit_context(source=WEB, address="2001:db8::1"):
        audit_record(
            actor=bob,
            action="change.comment",
            target=("change", 5, '=HYPERLINK("http://evil")'),
            detail={"reason": "<script>x</script>"},
        )


@pytest.fixture
def admin_client():
    return client_for(user_with("admin"))


def listed(response) -> list[str]:
    page = response.content.decode()
    return [action for action in ("run.stop", "schedule.add", "change.comment") if f"<code>{action}</code>" in page]


def test_it_needs_a_login_and_the_operator_or_admin_role(client, log):
    assert client.get("/audit/")["Location"].startswith("/login/")
    assert client.get("/audit.csv")["Location"].startswith("/login/")
    for role in ("viewer", "editor"):
        refused = client_for(user_with(role))
        assert refused.get("/audit/").status_code == 403
        assert refused.get("/audit.csv").status_code == 403
    assert client_for(user_with("operator")).get("/audit/").status_code == 200
    root = client_for(User.objects.create_superuser("root", password="x"))
    assert root.get("/audit/").status_code == 200


def test_it_shows_the_nav_link_only_to_those_who_may_read(log):
    assert 'href="/audit/"' in client_for(user_with("operator")).get("/history/").content.decode()
    assert 'href="/audit/"' not in client_for(user_with("viewer")).get("/history/").content.decode()


def test_it_lists_newest_first_and_escapes_what_it_shows(admin_client, log):
    response = admin_client.get("/audit/")
    page = response.content.decode()
    assert listed(response) == ["run.stop", "schedule.add", "change.comment"]
    assert page.index("change.comment") < page.index("schedule.add") < page.index("run.stop")
    assert "<script>x</script>" not in page and "&lt;script&gt;" in page
    assert "203.0.113.9" in page and "2001:db8::1" in page and "cli:ops" in page
    assert '<a href="/runs/12/">run #12 task/notes</a>' in page


@pytest.mark.parametrize(
    "query, expected",
    [
        ("who=ali", ["run.stop"]),
        ("action=run.", ["run.stop"]),
        ("action=change", ["change.comment"]),
        ("target_type=schedule&target_id=3", ["schedule.add"]),
        ("target_type=run&target_id=13", []),
        ("source=cli", ["schedule.add"]),
        ("source=web", ["run.stop", "change.comment"]),
    ],
)
def test_it_filters(admin_client, log, query, expected):
    response = admin_client.get(f"/audit/?{query}")
    assert response.status_code == 200 and listed(response) == expected


def test_it_filters_by_days(admin_client, log):
    # rows cannot be moved back in time: add one dated earlier
    AuditEntry.objects.create(at=timezone.now() - timedelta(days=10), action="run.cancel", source="web")
    today = timezone.localdate()
    before = (today - timedelta(days=9)).isoformat()
    recent = admin_client.get(f"/audit/?since={before}").content.decode()
    older = admin_client.get(f"/audit/?until={before}").content.decode()
    assert "<code>run.cancel</code>" not in recent and "<code>run.stop</code>" in recent
    assert "<code>run.cancel</code>" in older and "<code>run.stop</code>" not in older


def test_it_answers_a_bad_date_with_400_and_the_error(admin_client, log):
    response = admin_client.get("/audit/?since=yesterday")
    page = response.content.decode()
    assert response.status_code == 400
    assert 'id="id_since_error"' in page and "Enter a valid date." in page
    assert "Fix the filters above" in page and "<code>run.stop</code>" not in page
    backwards = admin_client.get("/audit/?since=2026-02-02&until=2026-02-01")
    assert backwards.status_code == 400 and "is before the start" in backwards.content.decode()
    csv_answer = admin_client.get("/audit.csv?since=yesterday")
    assert csv_answer.status_code == 400 and "from: Enter a valid date." in csv_answer.content.decode()


def test_it_pages_and_keeps_the_filters(admin_client):
    for i in range(55):
        audit_record(action="run.stop", target=("run", i, f"run #{i} task/x"))
    first = admin_client.get("/audit/?action=run").content.decode()
    assert "page 1 of 2" in first and 'href="?action=run&page=2"' in first
    second = admin_client.get("/audit/?action=run&page=2").content.decode()
    assert second.count("<code>run.stop</code>") == 5


def test_it_answers_htmx_with_the_results_only_and_varies_on_it(admin_client, log):
    response = admin_client.get("/audit/?source=cli", HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="audit-results">')
    assert "<html" not in page and listed(response) == ["schedule.add"]
    assert "HX-Request" in admin_client.get("/audit/")["Vary"]


def test_it_exports_the_filtered_rows_as_csv_with_formulas_defused(admin_client, log):
    response = admin_client.get("/audit.csv?source=web")
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    assert response["Content-Disposition"] == 'attachment; filename="rysh-audit.csv"'
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == ["at", "actor", "action", "target_type", "target_id", "target", "source", "address", "detail"]
    assert [r[2] for r in rows[1:]] == ["change.comment", "run.stop"]
    assert rows[1][5] == '\'=HYPERLINK("http://evil")'  # a spreadsheet shows it as text
    assert rows[1][7] == "2001:db8::1" and rows[2][1] == "alice"


def test_the_run_page_shows_its_own_entries(start):
    run, other = start(ONE_PASS), start(ONE_PASS, name="other")
    operator = client_for(user_with("operator"))
    operator.post(f"/runs/{run.pk}/stop/", REMOTE_ADDR="203.0.113.9")
    operator.post(f"/runs/{other.pk}/cancel/")
    page = operator.get(f"/runs/{run.pk}/").content.decode()
    audit = page[page.index('id="run-audit"') :]
    assert "<strong>operator-user</strong> <code>run.stop</code>" in audit and "from web 203.0.113.9" in audit
    assert "run.cancel" not in audit  # the other run's
    assert f'href="/audit/?target_type=run&amp;target_id={run.pk}"' in page
    viewer_page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()
    assert "<code>run.stop</code>" in viewer_page and "203.0.113.9" not in viewer_page  # no addresses
    assert "/audit/?" not in viewer_page
