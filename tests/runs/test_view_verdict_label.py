"""POST /runs/<pk>/passes/<n>/label/ and the labels on the run page (Django test client)."""

import pytest
from django.contrib.auth.models import User

from audit.models import AuditEntry
from runs.models import Pass, VerdictLabel
from runs.workbench.labels import verdict_label_set
from tests.conftest import drive
from tests.fake_model import FakeModel
from tests.runs.test_labels import JUDGED
from tests.runs.test_view_runs import client_for, user_with

pytestmark = pytest.mark.django_db
HOSTILE = "<script>alert('note')</script>"


@pytest.fixture
def judged(start):
    """Pass 1 judged NO, pass 2 judged YES."""
    return drive(start(JUDGED), FakeModel(task=[{"text": "Done."}], judge=["NO\nnot yet", "YES\nthe notes exist"]))


def url(run, number: int) -> str:
    return f"/runs/{run.pk}/passes/{number}/label/"


@pytest.mark.parametrize("role", ["operator", "editor", "admin"])
def test_it_lets_operators_editors_and_admins_label(judged, role):
    user = user_with(role)
    response = client_for(user).post(url(judged, 1), {"judge": "wrong", "note": "it had finished"})
    assert response.status_code == 302 and response["Location"] == f"/runs/{judged.pk}/#pass-1"
    label = VerdictLabel.objects.get(run_pass__run=judged, run_pass__number=1)
    assert (label.judge_right, label.note, label.by) == (False, "it had finished", user)


def test_it_refuses_a_viewer(judged):
    response = client_for(user_with("viewer")).post(url(judged, 1), {"judge": "right"})
    assert response.status_code == 403
    assert not VerdictLabel.objects.exists()


def test_it_sends_anonymous_people_to_the_login(client, judged):
    response = client.post(url(judged, 1), {"judge": "right"})
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert not VerdictLabel.objects.exists()


def test_it_requires_csrf_and_a_post(judged):
    client = client_for(user_with("operator"), csrf=True)
    assert client.post(url(judged, 1), {"judge": "right"}).status_code == 403
    assert client.get(url(judged, 1)).status_code == 405
    assert not VerdictLabel.objects.exists()


def test_it_is_404_for_a_pass_that_does_not_exist(judged):
    assert client_for(user_with("operator")).post(url(judged, 9), {"judge": "right"}).status_code == 404


def test_it_refuses_a_pass_without_a_verdict_and_says_why(judged):
    Pass.objects.create(run=judged, number=3)
    client = client_for(user_with("operator"))
    page = client.post(url(judged, 3), {"judge": "right"}, follow=True).content.decode()
    assert f"pass 3 of run #{judged.pk} has no verdict: there is nothing to label" in page
    page = client.post(url(judged, 1), {"judge": "maybe"}, follow=True).content.decode()
    assert "say whether the judge was right or wrong" in page
    assert not VerdictLabel.objects.exists()


def test_it_answers_htmx_with_the_fragments_and_clears(judged):
    client = client_for(user_with("operator"))
    html = client.post(url(judged, 2), {"judge": "right", "note": "yes, done"}, HTTP_HX_REQUEST="true").content.decode()
    assert '<section id="run-timeline" hx-swap-oob="true">' in html
    assert "judge right</strong>" in html and "yes, done" in html
    assert f"pass 2 of run #{judged.pk}: judge right" in html  # the flash
    html = client.post(url(judged, 2), {"judge": "clear"}, HTTP_HX_REQUEST="true").content.decode()
    assert f"pass 2 of run #{judged.pk}: label removed" in html and "judge right</strong>" not in html
    assert not VerdictLabel.objects.exists()
    assert AuditEntry.objects.filter(action="verdict.unlabel", target_id=str(judged.pk)).count() == 1


def test_it_shows_label_forms_only_to_those_who_may_label(judged):
    form = f'action="{url(judged, 1)}"'
    for role in ("operator", "editor"):
        page = client_for(user_with(role)).get(f"/runs/{judged.pk}/").content.decode()
        assert form in page and f'action="{url(judged, 2)}"' in page, role
        assert 'id="pass-1-note" hx-preserve' in page  # a push keeps what is being typed
    page = client_for(user_with("viewer")).get(f"/runs/{judged.pk}/").content.decode()
    assert form not in page and "judge wrong</button>" not in page
    assert "not labelled" in page


def test_it_shows_existing_labels_escaped_to_everyone(judged):
    alice = User.objects.create_user("alice", password="x")
    verdict_label_set(run_pass=judged.passes.get(number=1), judge_right=False, note=HOSTILE, user=alice)
    page = client_for(user_with("viewer")).get(f"/runs/{judged.pk}/").content.decode()
    assert "judge wrong</strong>" in page and "by alice" in page
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(&#x27;note&#x27;)&lt;/script&gt;" in page
    editor_page = client_for(user_with("editor")).get(f"/runs/{judged.pk}/").content.decode()
    assert HOSTILE not in editor_page  # nor in the note field, prefilled for the next change
    assert "<code>verdict.label</code> pass 1: judge wrong" in editor_page  # the page's audit lines
