"""`eval.failed` (docs/evals.md, docs/notifications.md): a suite with a failed or errored case
reaches the channels subscribed to it and those its recipe's `notify:` names, after the grading
commits, naming each failed case and what broke it, with a link to the suite."""

from __future__ import annotations

import pytest
from django.db import transaction

from evals.models import CaseResult, CaseState, Suite, SuiteState
from evals.signals import eval_failed
from notify import services
from notify.forms import ChannelForm
from notify.models import Delivery
from reviews.models import ChangeRequest
from tests.conftest import ONE_PASS

pytestmark = pytest.mark.django_db

NOTIFYING = ONE_PASS.replace(
    "    loop:\n", "    notify:\n      - channel: recipe-hook\n        events: [eval.failed]\n    loop:\n", 1
)


def channel(name, events=()):
    return services.channel_save(
        user=None, name=name, kind="webhook", url="http://127.0.0.1:9/x", events_wanted=events
    )[0]


def graded_suite(target="task/job", side="main", **states) -> Suite:
    suite = Suite.objects.create(target=target, side=side, state=SuiteState.DONE, tokens_counted=1234)
    for name, state in states.items():
        CaseResult.objects.create(
            suite=suite,
            name=name,
            folder=f"tasks/job/evals/{name}",
            state=state,
            failures=[{"assertion": "commands_forbidden", "message": "ran `rm -rf build` (forbidden: rm -rf *)"}]
            if state == CaseState.FAILED
            else [],
            cause="worker lost\nand never came back" if state == CaseState.ERROR else "",
        )
    return suite


def send(suite, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        eval_failed.send(sender=Suite, suite=suite)


def test_it_reaches_the_channels_subscribed_naming_each_failed_case(django_capture_on_commit_callbacks):
    subscribed, other = channel("evals-hook", ["eval.failed"]), channel("runs-hook", ["run.ended"])
    suite = graded_suite(ok=CaseState.PASSED, bad=CaseState.FAILED, lost=CaseState.ERROR)
    send(suite, django_capture_on_commit_callbacks)
    delivery = Delivery.objects.get()
    assert delivery.channel == subscribed and delivery.event == "eval.failed" and other.deliveries.count() == 0
    payload = delivery.payload
    assert payload["title"] == f"eval suite #{suite.pk} of task/job (main): 2 of 3 cases failed"
    assert "bad: failed: commands_forbidden: ran `rm -rf build` (forbidden: rm -rf *)" in payload["lines"]
    assert "lost: error: worker lost and never came back" in payload["lines"]  # one line
    assert [row["case"] for row in payload["data"]["failed"]] == ["bad", "lost"]
    assert payload["data"]["failed"][0]["assertions"] == ["commands_forbidden"]
    assert payload["link"].endswith("/recipes/task/job/#evals") and payload["link"].startswith("http")


def test_a_recipes_notify_names_its_own_channel_for_it(catalogued, django_capture_on_commit_callbacks):
    own = channel("recipe-hook")  # subscribed to nothing itself
    catalogued(NOTIFYING)
    send(graded_suite(bad=CaseState.FAILED), django_capture_on_commit_callbacks)
    assert Delivery.objects.get().channel == own


def test_nothing_is_sent_before_the_grading_commits_nor_if_it_rolls_back(django_capture_on_commit_callbacks):
    channel("evals-hook", ["eval.failed"])
    suite = graded_suite(bad=CaseState.FAILED)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        eval_failed.send(sender=Suite, suite=suite)
    assert not Delivery.objects.exists() and len(callbacks) == 1
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            eval_failed.send(sender=Suite, suite=suite)
            raise RuntimeError("the grading failed")
    assert not Delivery.objects.exists()


def test_a_suite_that_passes_after_all_sends_nothing(django_capture_on_commit_callbacks):
    channel("evals-hook", ["eval.failed"])
    send(graded_suite(ok=CaseState.PASSED), django_capture_on_commit_callbacks)
    assert not Delivery.objects.exists()


def test_a_change_side_suite_says_which_change(django_capture_on_commit_callbacks):
    channel("evals-hook", ["eval.failed"])
    change = ChangeRequest.objects.create(title="t", action="edit", kind="task", name="job", base_sha="0" * 40)
    suite = graded_suite(side="change", bad=CaseState.FAILED)
    Suite.objects.filter(pk=suite.pk).update(change_request=change)
    suite.refresh_from_db()
    send(suite, django_capture_on_commit_callbacks)
    payload = Delivery.objects.get().payload
    assert f"(change #{change.pk})" in payload["title"] and payload["link"].endswith(f"/changes/{change.pk}/#evals")


def test_channels_subscribe_to_it_on_the_form():
    form = ChannelForm({"name": "evals", "kind": "webhook", "events": ["eval.failed"], "enabled": True})
    assert form.is_valid(), form.errors
    assert form.cleaned_data["events"] == ["eval.failed"]
