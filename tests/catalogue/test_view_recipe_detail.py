import pytest
from django.contrib.auth.models import User

from catalogue.models import Recipe, RecipeVersion
from catalogue.sync import recipes_sync
from tests.recipes_git import BROKEN, login, make_user, recipe_text, work  # noqa: F401
from tests.runs.test_labels import label, make_run

pytestmark = pytest.mark.django_db
HOSTILE = "<script>alert(1)</script>"


@pytest.fixture
def viewer(client, db):
    return login(client, make_user("vera", role=None))  # no group: reads only


def test_it_needs_a_login(client, work):
    recipes_sync()
    response = client.get("/recipes/task/report/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_it_shows_the_prompt_the_plan_and_the_versions(viewer, work):
    recipes_sync()
    work.commit("Second", tasks__report=recipe_text("second", size="5b", total="25b"))
    recipes_sync()
    page = viewer.get("/recipes/task/report/").content.decode()
    assert "<p>Write the report.</p>" in page
    assert "loop enabled=true  maxIter=5" in page
    assert "perPass: tokens=1000000" in page
    assert "Initial recipes" in page and "Second" in page
    assert page.count('<tr id="version-') == 2
    assert "No runs yet." in page
    assert "Edit</a>" not in page and "Propose rename" not in page  # a viewer reads only


def test_it_shows_an_editor_the_edit_rename_and_delete_controls(client, work):
    recipes_sync()
    login(client, make_user("eddie"))
    page = client.get("/recipes/task/report/").content.decode()
    assert 'href="/recipes/task/report/edit/"' in page
    assert "Propose rename" in page and "Propose deletion" in page


def test_it_shows_a_broken_newest_version_beside_the_good_one(viewer, work):
    recipes_sync()
    work.commit("Break it", tasks__report=BROKEN)
    recipes_sync()
    page = viewer.get("/recipes/task/report/").content.decode()
    assert "The newest version is invalid" in page
    assert "report.md:4 loop.do.interval: expected a whole number from 1 to 500, got 900" in page
    assert "the last good version (below) is the one that runs" in page
    assert "<p>Write the report.</p>" in page  # the good version's prompt


def test_it_is_404_for_unknown_recipes_and_kinds(viewer, work):
    recipes_sync()
    assert viewer.get("/recipes/task/nope/").status_code == 404
    assert viewer.get("/recipes/elf/report/").status_code == 404


def test_it_escapes_everything_from_the_repository(viewer, work):
    git_args = {
        "tasks__evil": f'---\ndescription: "{HOSTILE}"\n---\n{HOSTILE}\n\n'
        "[click](javascript:alert(1)) [ok](https://example.com)\n"
    }
    work.commit(f"Commit message {HOSTILE}", **git_args)
    recipes_sync()
    RecipeVersion.objects.update(author=f"Mallory {HOSTILE}")
    page = viewer.get("/recipes/task/evil/").content.decode()
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="javascript' not in page
    assert 'href="https://example.com" rel="nofollow noopener noreferrer"' in page


def test_it_shows_archived_recipes_with_their_history(viewer, work):
    recipes_sync()
    work.commit("Remove scout", webs__scout=None)
    recipes_sync()
    page = viewer.get("/recipes/web/scout/").content.decode()
    assert "was deleted from the repository" in page
    assert Recipe.objects.get(name="scout").archived


def test_it_says_where_to_label_when_no_verdict_is_labelled(viewer, work):
    recipes_sync()
    page = viewer.get("/recipes/task/report/").content.decode()
    assert "Judge vs people" in page
    assert "No verdict has been labelled yet" in page and "judge wrong" in page
    assert 'id="judge-agreement"' not in page


def test_it_shows_the_judges_agreement_with_people(viewer, work):
    recipes_sync()
    alice = User.objects.create_user("alice", password="x")
    goal = f"Done {HOSTILE}"
    a = make_run(until=f"'{goal}'", judge="haiku", on=1, verdicts=["NO", "YES", "YES"], name="report")
    for number, right in ((1, False), (2, True), (3, True)):
        label(a, number, right, alice)
    page = viewer.get("/recipes/task/report/").content.decode()
    assert 'id="judge-agreement"' in page and "No verdict has been labelled yet" not in page
    assert "<td>3</td><td>2</td><td>1</td><td>67%</td>" in page
    assert f'<a href="/runs/{a.pk}/#pass-1">#{a.pk} pass 1</a>' in page
    assert "2026-11-01 – 2026-11-01" in page
    assert HOSTILE not in page and "Done &lt;script&gt;alert(1)&lt;/script&gt;" in page
