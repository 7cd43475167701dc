"""The history page's filters and its CSV export, which read the same form (Django test client)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.runs.test_view_runs import client_for, finished, user_with  # noqa: F401

pytestmark = pytest.mark.django_db


def csv_lines(response) -> list[str]:
    return b"".join(response.streaming_content).decode().splitlines()


@pytest.fixture
def viewer():
    return client_for(user_with("viewer"))


def test_it_filters_by_date_range_on_the_page_and_in_the_csv(viewer, finished):
    today = timezone.localdate(finished.ended_at)
    row = f'id="history-row-{finished.pk}"'
    assert row in viewer.get(f"/history/?since={today}&until={today}").content.decode()
    assert row not in viewer.get(f"/history/?until={today - timedelta(days=1)}").content.decode()
    assert len(csv_lines(viewer.get(f"/history.csv?since={today}"))) == 2
    assert len(csv_lines(viewer.get(f"/history.csv?since={today + timedelta(days=1)}"))) == 1


def test_it_shows_a_bad_date_as_an_error_instead_of_dropping_it(viewer, finished):
    response = viewer.get("/history/?since=2024-13-45&cause=done")
    page = response.content.decode()
    assert response.status_code == 400
    assert 'id="id_since_error"' in page and "from: Enter a valid date." in page
    assert 'aria-describedby="id_since_error"' in page
    assert 'value="2024-13-45"' in page and 'value="done"' in page  # what was typed stays
    assert f'id="history-row-{finished.pk}"' not in page  # no list that only looks filtered
    assert "Fix the filters above to see runs." in page


def test_it_says_when_the_range_ends_before_it_starts(viewer, finished):
    response = viewer.get("/history/?since=2024-05-02&until=2024-05-01")
    assert response.status_code == 400
    assert "to: 2024-05-01 is before the start, 2024-05-02" in response.content.decode()


def test_it_refuses_an_unknown_kind(viewer, finished):
    response = viewer.get("/history/?kind=robot")
    assert response.status_code == 400 and "kind: Select a valid choice." in response.content.decode()


def test_it_refuses_to_export_csv_with_a_bad_filter(viewer, finished):
    response = viewer.get("/history.csv?until=yesterday&kind=task")
    assert response.status_code == 400 and response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == "to: Enter a valid date.\n"


def test_it_keeps_the_filters_in_the_export_link_and_the_form(viewer, finished):
    page = viewer.get("/history/?recipe=job&kind=task").content.decode()
    assert 'href="/history.csv?recipe=job&amp;kind=task"' in page
    assert 'name="recipe" value="job"' in page and '<option value="task" selected>' in page


def test_a_cause_that_reads_like_a_formula_exports_as_text(viewer, finished):  # noqa: F811
    finished.cause = '=HYPERLINK("http://evil")'
    finished.save()
    last = csv_lines(viewer.get("/history.csv"))[-1]
    assert last.endswith(',"\'=HYPERLINK(""http://evil"")"') and ",=HYPERLINK" not in last
