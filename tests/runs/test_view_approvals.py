"""The run page's approvals panel and filmstrip (Django test client)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from runs.models import Approval, ApprovalState, Pass, Run, RunState, Step
from tests.runs.test_view_runs import client_for, user_with

pytestmark = pytest.mark.django_db

WEB = "---\nurl: https://example.com/\napprove: ['click:Publish*']\n---\nPublish.\n"


@pytest.fixture
def waiting(start, settings, tmp_path):
    """A web run whose engine waits on an approval (rows as the engine leaves them)."""
    settings.RYSH_SCREENSHOTS_DIR = tmp_path / "shots"
    run = start("---\nloop:\n  do:\n    budget:\n      size: 20p\n---\nWork.\n")
    Run.objects.filter(pk=run.pk).update(kind="web", state=RunState.AWAITING_APPROVAL, pass_number=1)
    run.refresh_from_db()
    run_pass = Pass.objects.create(run=run, number=1)
    step = Step.objects.create(
        run_pass=run_pass,
        number=1,
        leg="task",
        model="m",
        max_tokens=1,
        reserved_tokens=1,
        status="done",
        page_url="https://example.com/draft",
        page_title="Draft",
        screenshot=f"{run.pk}/1-1.jpg",
        tool_calls=[{"name": "click", "input": {"text": "Publish"}}],
    )
    (tmp_path / "shots" / str(run.pk)).mkdir(parents=True)
    (tmp_path / "shots" / step.screenshot).write_bytes(b"\xff\xd8fake-jpeg")
    approval = Approval.objects.create(
        run=run,
        pass_number=1,
        step_number=2,
        tool_name="click",
        tool_input={"text": "Publish"},
        pattern="click:Publish*",
        subject="Publish",
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    return run, step, approval


def test_an_operator_sees_the_pending_approval_and_approves_it(waiting):
    run, _, approval = waiting
    client = client_for(user_with("operator"))
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-state">awaiting approval<' in page
    assert "Waiting for a person:" in page and "click(text=&#x27;Publish&#x27;)" in page
    assert f'data-control-url="/runs/{run.pk}/approvals/{approval.pk}/approve/"' in page
    response = client.post(f"/runs/{run.pk}/approvals/{approval.pk}/approve/", {"reason": ""}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    approval.refresh_from_db()
    assert approval.state == ApprovalState.APPROVED and approval.answered_by.username == "operator-user"
    again = client.post(f"/runs/{run.pk}/approvals/{approval.pk}/reject/", {"reason": "x"}, HTTP_HX_REQUEST="true")
    assert "was already answered (approved)" in again.content.decode()


def test_a_rejection_keeps_its_reason(waiting):
    run, _, approval = waiting
    client_for(user_with("operator")).post(
        f"/runs/{run.pk}/approvals/{approval.pk}/reject/", {"reason": "the title has a typo"}
    )
    approval.refresh_from_db()
    assert (approval.state, approval.reason) == (ApprovalState.REJECTED, "the title has a typo")


def test_a_viewer_sees_the_approval_but_cannot_answer_it(waiting):
    run, _, approval = waiting
    client = client_for(user_with("viewer"))
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Waiting for a person:" in page and "approve/" not in page
    assert client.post(f"/runs/{run.pk}/approvals/{approval.pk}/approve/").status_code == 403
    approval.refresh_from_db()
    assert approval.state == ApprovalState.PENDING


def test_the_filmstrip_shows_each_web_step_behind_a_login(waiting, client):
    run, step, _ = waiting
    viewer = client_for(user_with("viewer"))
    page = viewer.get(f"/runs/{run.pk}/").content.decode()
    url = f"/runs/{run.pk}/steps/{step.pk}/screenshot.jpg"
    assert 'id="run-filmstrip"' in page and f'src="{url}"' in page
    response = viewer.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "image/jpeg"
    assert b"".join(response.streaming_content) == b"\xff\xd8fake-jpeg"
    assert client.get(url).status_code == 302  # anonymous: to the login page
    Step.objects.filter(pk=step.pk).update(screenshot="../../etc/passwd")
    assert viewer.get(url).status_code == 404
