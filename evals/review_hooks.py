"""What evals do when reviews say something happened (reviews never imports evals).

With RYSH_REVIEW_AUTO_EVALS on, opening or revising a change request that touches a recipe with
eval cases starts its suites on main and on the change, after the change's transaction commits
(docs/evals.md, "In review"). A suite refused (a quota it would not fit) is said in the thread.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction

from evals import services
from evals.selectors import change_has_cases
from reviews.models import ChangeRequest, ReviewComment, Verdict
from reviews.signals import change_opened, change_updated

log = logging.getLogger(__name__)


def connect() -> None:
    change_opened.connect(change_suites_auto, sender=ChangeRequest, dispatch_uid="evals.auto.opened")
    change_updated.connect(change_suites_auto, sender=ChangeRequest, dispatch_uid="evals.auto.updated")


def change_suites_auto(sender, change: ChangeRequest, **kwargs) -> None:
    if not settings.RYSH_REVIEW_AUTO_EVALS:
        return
    transaction.on_commit(lambda: _start(change.pk))


def _start(change_pk: int) -> None:
    change = ChangeRequest.objects.select_related("author").filter(pk=change_pk).first()
    if change is None or not change.is_open or not change_has_cases(change):
        return
    try:
        services.change_suites_start(change=change, user=change.author)
    except services.SuiteRefused as exc:
        ReviewComment.objects.create(
            change_request=change, verdict=Verdict.EVENT, body=f"The evals did not start by themselves: {exc}"
        )
    except Exception:  # the change is saved whatever the suites do; the button is still there
        log.exception("starting the evals of change request #%s failed", change_pk)
