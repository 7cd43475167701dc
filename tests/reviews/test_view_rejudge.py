"""The Re-judge section of a change request that edits `until:` (docs/judge-workbench.md)."""

import re

import pytest
from django.test import Client

from audit.models import AuditEntry
from reviews.models import ChangeRequest
from runs.models import LedgerEntry, Rejudge
from runs.workbench import rejudge as rj
from runs.worker import execute_rejudge
from tests.fakes.anthropic_server import fake_anthropic  # noqa: F401 (fixture)
from tests.recipes_git import login, make_user, recipe_text, work  # noqa: F401
from tests.runs.rejudge_fixtures import judged_run, label, scripted_verdicts

pytestmark = pytest.mark.django_db
NEW_GOAL = "The report cites three sources."


@pytest.fixture
def history(tmp_path):
    old = judged_run(tmp_path / "a", [("YES", "R1 <b>one</b> source")])
    new = judged_run(tmp_path / "b", [("NO", "R2 two sources"), ("YES", "R3 three sources")])
    label(old, 1, judge_right=True, note="<i>fine by me</i>")  # truth YES; the new judge says NO
    label(new, 1, judge_right=True)  # truth NO; the new judge says NO
    return old, new


def propose(client, goal=NEW_GOAL):
    text = recipe_text().replace("until: The report exists.", f"until: {goal}")
    client.post("/recipes/task/report/edit/", {"text": text, "message": "A stricter goal"})
    return ChangeRequest.objects.latest("id")


def seen(client, change, n=10) -> dict:
    """The Re-judge form's fields as the page shows them for N: n and the estimate's fingerprint."""
    page = client.get(f"/changes/{change.pk}/?n={n}").content.decode()
    found = re.search(r'name="estimate" value="([0-9a-f]+)"', page)
    return {"n": n, "estimate": found[1] if found else ""}


def press(client, change, queued, n=10, **kwargs):
    """POST the button as the page showed it; then run what it queued (once its transaction
    committed) as the worker would."""
    ids, capture = queued
    fields = seen(client, change, n)
    with capture(execute=True):
        response = client.post(f"/changes/{change.pk}/rejudge/", fields, **kwargs)
    for rejudge_id in ids:
        execute_rejudge(rejudge_id)
    ids.clear()
    return response


@pytest.fixture
def queued(monkeypatch, django_capture_on_commit_callbacks):
    ids = []
    monkeypatch.setattr(rj, "async_task", lambda func, rejudge_id, **kw: ids.append(rejudge_id))
    return ids, django_capture_on_commit_callbacks


def test_it_shows_the_estimate_then_the_delta_table(fake_anthropic, grace, linus, history, queued):
    old, new = history
    scripted_verdicts(fake_anthropic, {"R1": "NO\nonly one source", "R2": "NO\ntwo only", "R3": "YES\nthree"})
    change = propose(grace)
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "Re-judge past results" in page and NEW_GOAL in page and "The report exists." in page
    estimate = rj.rejudge_estimate(
        kind="task", name="report", until=NEW_GOAL, judge_model="claude-haiku-4-5", n=10, provider="anthropic"
    )
    assert f"at most {estimate.budget_tokens:,} tokens" in page and "$" in page
    assert "Re-judge 3 passes" in page
    page = linus.get(f"/changes/{change.pk}/?n=2").content.decode()
    assert "Re-judge 2 passes" in page and "only 2 of the" not in page

    response = press(linus, change, queued, n=3)
    assert response.status_code == 302 and response["Location"].endswith(f"/changes/{change.pk}/#rejudge")
    rejudge = Rejudge.objects.get()
    assert (rejudge.change_request, rejudge.requested_by.username, rejudge.cause) == (change, "linus", "done")
    audit = AuditEntry.objects.get(action="rejudge.start")
    assert (audit.actor_name, audit.target_id, audit.detail["change"]) == ("linus", str(rejudge.pk), change.pk)
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "1 of 3 verdicts flip; with people: the new judge agrees on 1, disagrees on 1 (of 2 labelled passes)" in page
    assert page.count('<tr class="flipped">') == 1
    assert f'href="/runs/{old.pk}/#pass-1"' in page and f'href="/runs/{old.pk}/files/result.md?pass=1"' in page
    assert "judge right (so YES): &lt;i&gt;fine by me&lt;/i&gt;" in page and "<i>fine by me</i>" not in page
    assert "only one source" in page and "old reason 1" in page
    assert f"Tokens: {rejudge.tokens_counted} of its budget of {rejudge.budget_tokens}" in page
    assert LedgerEntry.objects.filter(rejudge=rejudge).count() == 3
    assert 'hx-trigger="every 1s"' not in page  # finished: no more polling
    # beside the plan and cost delta, which the re-judge's table must not replace
    assert "worst case " in page and "no resolved plan on either side" not in page


def test_it_polls_while_queued_and_stops_when_finished(fake_anthropic, grace, linus, history, monkeypatch):
    monkeypatch.setattr(rj, "async_task", lambda *a, **kw: None)  # no worker picks it up
    change = propose(grace)
    linus.post(f"/changes/{change.pk}/rejudge/", seen(linus, change, 2))
    rejudge = Rejudge.objects.get()
    part = linus.get(f"/changes/{change.pk}/rejudge/{rejudge.pk}/").content.decode()
    assert 'hx-trigger="every 1s"' in part and "queued…" in part
    assert re.search(rf'hx-get="/changes/{change.pk}/rejudge/{rejudge.pk}/"', part)
    execute_rejudge(rejudge.pk)
    part = linus.get(f"/changes/{change.pk}/rejudge/{rejudge.pk}/").content.decode()
    assert "hx-trigger" not in part and "finished — done" in part and "verdicts flip" in part
    other = propose(grace, goal="The report has a title.")
    assert linus.get(f"/changes/{other.pk}/rejudge/{rejudge.pk}/").status_code == 404  # not this change's
    assert Client().get(f"/changes/{change.pk}/rejudge/{rejudge.pk}/").status_code == 302  # log in first


def test_a_viewer_sees_results_but_cannot_press(fake_anthropic, grace, linus, history, queued):
    change = propose(grace)
    press(linus, change, queued, n=1)
    viewer = login(Client(), make_user("vera", role="viewer"))
    page = viewer.get(f"/changes/{change.pk}/").content.decode()
    assert "verdicts flip" in page and "Re-judge 3 passes" not in page
    assert "Editors and admins can re-judge" in page
    assert viewer.post(f"/changes/{change.pk}/rejudge/", {"n": 1}).status_code == 403
    assert Rejudge.objects.count() == 1


def test_anonymous_is_sent_to_log_in_and_csrf_is_required(fake_anthropic, grace, history, queued):
    change = propose(grace)
    response = Client().post(f"/changes/{change.pk}/rejudge/", {"n": 1})
    assert response.status_code == 302 and "/login" in response["Location"]
    strict = login(Client(enforce_csrf_checks=True), make_user("olga"))
    assert strict.post(f"/changes/{change.pk}/rejudge/", {"n": 1}).status_code == 403
    assert Rejudge.objects.count() == 0
    fields = seen(strict, change, 1)
    token = strict.cookies["csrftoken"].value
    assert strict.post(f"/changes/{change.pk}/rejudge/", {**fields, "csrfmiddlewaretoken": token}).status_code == 302
    assert Rejudge.objects.count() == 1


def test_a_change_that_leaves_the_judge_alone_offers_no_rejudge(fake_anthropic, grace, linus, history):
    grace.post(
        "/recipes/task/report/edit/", {"text": recipe_text("bigger", size="5b", total="25b"), "message": "Budget"}
    )
    change = ChangeRequest.objects.latest("id")
    assert "Re-judge past results" not in linus.get(f"/changes/{change.pk}/").content.decode()
    linus.post(f"/changes/{change.pk}/rejudge/", {"n": 1})
    assert Rejudge.objects.count() == 0


def test_it_says_when_there_is_nothing_to_rejudge(fake_anthropic, grace, linus):
    change = propose(grace)
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "No judged pass of <code>task/report</code> has a saved result yet" in page
    assert "Re-judge 0" not in page


def test_a_new_judge_model_alone_is_a_judge_change_too(db):
    from reviews.selectors import change_request_judge_change

    base = recipe_text()
    other = base.replace("prompts:", "judge_model: claude-sonnet-4-6\n    prompts:")
    change = ChangeRequest(kind="task", name="report", base_text=base, proposed_text=other)
    found = change_request_judge_change(change)
    assert found is not None and (found.until_changed, found.judge_changed) == (False, True)
    assert found.judge_after == "claude-sonnet-4-6"
    assert (
        change_request_judge_change(ChangeRequest(kind="task", name="report", base_text=base, proposed_text=base))
        is None
    )
    broken = ChangeRequest(kind="task", name="report", base_text=base, proposed_text="---\nloop: 3\n---\nx\n")
    assert change_request_judge_change(broken) is None
