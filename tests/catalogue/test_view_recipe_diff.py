import pytest

from catalogue.models import RecipeVersion
from catalogue.sync import recipes_sync
from tests.recipes_git import BROKEN, login, make_user, recipe_text, work  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(client, db):
    return login(client, make_user("vera", role="viewer"))


def ids(name):
    return list(RecipeVersion.objects.filter(recipe__name=name).order_by("id").values_list("id", flat=True))


def test_it_diffs_the_newest_version_against_the_one_before(reader, work):
    recipes_sync()
    work.commit("Bigger", tasks__report=recipe_text(size="5b", total="25b"))
    recipes_sync()
    page = reader.get("/recipes/task/report/diff/").content.decode()
    assert "worst case 1s → 25b, +$10.00" in page
    assert '<tr class="diff-del"><td class="ln">6</td><td class="ln"></td><td><code>-      size: 4b</code>' in page
    assert '<tr class="diff-add"><td class="ln"></td><td class="ln">6</td><td><code>+      size: 5b</code>' in page
    assert "perPass: tokens=800000" in page and "perPass: tokens=1000000" in page


def test_it_diffs_any_two_versions(reader, work):
    recipes_sync()
    work.commit("Two", tasks__report=recipe_text("two"))
    work.commit("Three", tasks__report=recipe_text("three", size="2b", total="10b"))
    recipes_sync()
    first, _, third = ids("report")
    page = reader.get(f"/recipes/task/report/diff/?a={third}&b={first}").content.decode()
    assert "worst case 2000000 → 1s" not in page
    assert "worst case 10b → 1s, +$20.00" in page
    assert "+description: A task" in page and "-description: three" in page


def test_the_first_version_diffs_against_nothing(reader, work):
    recipes_sync()
    page = reader.get(f"/recipes/task/report/diff/?b={ids('report')[0]}").content.decode()
    assert "the recipe did not exist" in page
    assert "worst case — → 1s, +$40.00" in page


def test_it_shows_a_broken_version_in_the_plan_diff(reader, work):
    recipes_sync()
    work.commit("Break", tasks__report=BROKEN)
    recipes_sync()
    page = reader.get("/recipes/task/report/diff/").content.decode()
    assert "worst case 1s → invalid" in page
    assert "report.md:4 loop.do.interval" in page


def test_it_refuses_versions_of_another_recipe(reader, work):
    recipes_sync()
    other = ids("scout")[0]
    assert reader.get(f"/recipes/task/report/diff/?b={other}").status_code == 404
    assert reader.get("/recipes/task/report/diff/?b=nonsense").status_code == 404


def test_it_escapes_the_diff(reader, work):
    recipes_sync()
    work.commit("<b>bold</b> message", tasks__report=recipe_text("<script>alert(1)</script>"))
    recipes_sync()
    page = reader.get("/recipes/task/report/diff/").content.decode()
    assert "<script>alert(1)</script>" not in page and "<b>bold</b>" not in page
    assert "+description: &lt;script&gt;alert(1)&lt;/script&gt;" in page
