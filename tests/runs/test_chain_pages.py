"""A chain on the run page, the history, the recipe page, the API's run and `auto <kind> show`
(docs/chains.md): a real chain a -> b, the first run driven, the second started by its success."""

from io import StringIO

import pytest
from django.core.management import call_command

from runs import services
from runs.models import Run
from tests.api.conftest import api_as  # noqa: F401
from tests.conftest import drive
from tests.fake_model import FakeModel
from tests.runs.test_chains import DIGEST, FIRST, saving
from tests.runs.test_view_runs import client_for, user_with

pytestmark = pytest.mark.django_db


@pytest.fixture
def chained(catalogued, django_capture_on_commit_callbacks):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    first = services.run_start(kind="task", name_or_path="first", args=[], provider="scripted")
    with django_capture_on_commit_callbacks(execute=True):
        first = drive(first, saving("findings"))
    return first, drive(Run.objects.get(chain_parent=first), FakeModel(task=["Done."]))


def test_the_run_pages_link_each_other_and_show_the_chain_as_one_line(chained):
    first, second = chained
    client = client_for(user_with("viewer"))
    page = client.get(f"/runs/{first.pk}/").content.decode()
    line = f'task/first #{first.pk}</strong> <span class="muted small">(done)</span> → '
    assert 'id="chain-line"' in page and line in page
    assert f'chained: <a href="/runs/{second.pk}/">task/digest #{second.pk}</a>' in page
    page = client.get(f"/runs/{second.pk}/").content.decode()
    assert f'Started by the success of <a href="/runs/{first.pk}/">task/first #{first.pk}</a>' in page
    assert f"<strong>task/digest #{second.pk}</strong>" in page
    history = client.get("/history/").content.decode()
    assert f"chained from #{first.pk}" in history


def test_a_run_in_no_chain_has_no_chain_section(catalogued):
    catalogued(DIGEST, "digest")
    run = drive(services.run_start(kind="task", name_or_path="digest", args=[], provider="scripted"), FakeModel())
    page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()
    assert 'id="chain"' not in page


def test_the_recipe_page_shows_the_chain_and_its_worst_case(catalogued):
    catalogued(DIGEST, "digest")
    catalogued(FIRST, "first")
    page = client_for(user_with("viewer")).get("/recipes/task/first/").content.decode()
    assert "chain:   task/first -&gt; task/digest" in page
    assert "chain worst case:" in page and "over 2 recipes" in page


def test_the_api_and_show_name_the_chain(chained, api_as):  # noqa: F811
    first, second = chained
    api = api_as("viewer", "read")
    one, two = api.get(f"/api/runs/{first.pk}").json(), api.get(f"/api/runs/{second.pk}").json()
    assert (one["chain_parent"], one["chain_next"], one["chain_depth"]) == (None, second.pk, 0)
    assert (two["chain_parent"], two["chain_next"], two["chain_depth"]) == (first.pk, None, 1)
    listed = {r["id"]: r for r in api.get("/api/runs").json()["runs"]}
    assert listed[second.pk]["chain_parent"] == first.pk
    out = StringIO()
    call_command("auto", "task", "show", f"#{second.pk}", stdout=out)
    assert f"chain: task/first #{first.pk} (done) -> task/digest #{second.pk} (done)" in out.getvalue()
