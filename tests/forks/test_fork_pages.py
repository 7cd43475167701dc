"""The fork pages (docs/forks.md): "Fork from here" and "Redo" on each pass's row, the fork form,
the lineage on the run page, the compare page and a run's family tree."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from catalogue.models import Recipe
from catalogue.sync import recipes_sync
from reviews.models import ChangeRequest
from reviews.services import text_diff
from runs import services
from runs.forks.lineage import edits_from, parent_values, run_family
from runs.models import Run
from tests.conftest import drive
from tests.forks.fork_fixtures import (
    four_pass_recipe,  # noqa: F401 (fixture)
    per_pass,
)
from tests.forks.rows_f import pass_row, run_row
from tests.recipes_git import login, make_user
from tests.workspaces.conftest import code_repo  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db
HOSTILE = "<script>alert(1)</script>"


@pytest.fixture
def operator():
    return login(Client(), make_user("olga", role="operator"))


@pytest.fixture
def viewer():
    return login(Client(), make_user("vera", role="viewer"))


@pytest.fixture
def family(tmp_path):
    parent = run_row()
    for n in (1, 2, 3):
        pass_row(parent, n, files={"report.md": f"v{n}\n"}, folder=tmp_path / "parent")
    fork = run_row(
        parent=parent, fork_pass=2, fork_edits={"prompt": f"Write the report.\nAnd {HOSTILE}\n", "until": "Done."}
    )
    pass_row(fork, 3, verdict="YES", files={"report.md": "better\n"}, folder=tmp_path / "fork")
    grandchild = run_row(parent=fork, fork_pass=2, fork_redo=True)
    return parent, fork, grandchild


def test_each_ended_pass_offers_fork_and_redo_to_who_may_run(family, operator, viewer):
    parent, _, _ = family
    page = operator.get(f"/runs/{parent.pk}/").content.decode()
    for n in (1, 2, 3):
        assert f'href="/runs/{parent.pk}/fork/?pass={n}">Fork from here</a>' in page
        assert f'href="/runs/{parent.pk}/fork/?pass={n}&amp;redo=1">Redo</a>' in page
    assert "Fork from here" not in viewer.get(f"/runs/{parent.pk}/").content.decode()
    assert viewer.get(f"/runs/{parent.pk}/fork/?pass=2").status_code == 403
    assert viewer.post(f"/runs/{parent.pk}/fork/", {"pass_number": 2, "action": "start"}).status_code == 403


def test_the_fork_page_says_where_it_came_from_with_its_prompt_edit_escaped(family, operator):
    parent, fork, grandchild = family
    page = operator.get(f"/runs/{fork.pk}/").content.decode()
    assert f'Forked from <a href="/runs/{parent.pk}/">run #{parent.pk}</a> at pass 2' in page
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert '<tr class="diff-add">' in page  # the prompt edit as a diff
    assert "<code>until</code>: Done." in page
    assert f'<a href="/runs/{grandchild.pk}/">run #{grandchild.pk}</a> (redo of pass 3' in page
    parent_page = operator.get(f"/runs/{parent.pk}/").content.decode()
    assert f'Forks of this run: <a href="/runs/{fork.pk}/">run #{fork.pk}</a> (from pass 2' in parent_page
    # "Propose this edit" is for editors only
    assert "Propose this edit" not in page
    editor = login(Client(), make_user("erin", role="editor"))
    assert "Propose this edit" in editor.get(f"/runs/{fork.pk}/").content.decode()


def test_the_fork_form_starts_from_the_parents_version(family, operator):
    parent, fork, _ = family
    page = operator.get(f"/runs/{parent.pk}/fork/").content.decode()
    assert ">\nWrite the report.\n</textarea>" in page
    assert 'name="budget" value="20b"' in page
    assert 'name="csrfmiddlewaretoken"' in page
    assert '<tr id="fork-point-3"><td>3</td><td>yes' in page
    # a fork's own form starts from what the fork ran with
    assert "And &lt;script&gt;" in operator.get(f"/runs/{fork.pk}/fork/").content.decode()


def test_only_what_the_person_changed_is_an_edit(family):
    parent, _, _ = family
    values = parent_values(parent)
    assert values == {
        "prompt": "Write the report.\n",
        "iterate_with": "",
        "until": "The report exists.",
        "budget": "20b",
        "model": "claude-sonnet-4-5",
        "effort": "",
    }
    assert edits_from(values, parent).edited() == {}
    assert edits_from({**values, "until": "Both exist."}, parent).edited() == {"until": "Both exist."}


def test_the_compare_page_shows_a_fork_beside_its_parent(family, operator):
    parent, fork, _ = family
    page = operator.get(f"/runs/{fork.pk}/compare/").content.decode()
    assert f'A: <a href="/runs/{parent.pk}/">run #{parent.pk}</a>' in page
    assert f'B: <a href="/runs/{fork.pk}/">run #{fork.pk}</a>' in page
    assert page.count("started after it (not run again)") == 2  # the fork's rows at passes 1 and 2
    assert '<tr id="compare-pass-3"><td>3</td>' in page
    assert "compare-changed" in page and "-v3" in page and "+better" in page
    assert HOSTILE not in page
    assert "Neither run" not in page


def test_the_compare_page_refuses_runs_of_two_recipes(family, operator):
    parent, _, _ = family
    other = run_row(name="other")
    response = operator.get(f"/runs/{parent.pk}/compare/?with={other.pk}")
    assert response.status_code == 400
    assert "compare runs of one recipe" in response.content.decode()
    page = operator.get(f"/runs/{other.pk}/compare/").content.decode()
    assert "Choose a run of this recipe to compare with." in page


def test_the_family_tree_nests_forks_under_their_parent(family, operator):
    parent, fork, grandchild = family
    tree = run_family(grandchild)
    assert tree.run == parent
    assert [c.run for c in tree.children] == [fork]
    assert [c.run for c in tree.children[0].children] == [grandchild]
    page = operator.get(f"/runs/{grandchild.pk}/family/").content.decode()
    assert page.index(f"family-{parent.pk}") < page.index(f"family-{fork.pk}") < page.index(f"family-{grandchild.pk}")


def test_pages_need_a_login(family):
    parent, fork, _ = family
    anonymous = Client()
    for url in (f"/runs/{parent.pk}/fork/", f"/runs/{fork.pk}/compare/", f"/runs/{fork.pk}/family/"):
        assert anonymous.get(url).status_code == 302
    assert anonymous.post(f"/runs/{fork.pk}/propose/").status_code == 302


def test_a_post_without_the_csrf_token_is_refused(family):
    parent, fork, _ = family
    client = Client(enforce_csrf_checks=True)
    login(client, make_user("erin", role="editor"))
    assert client.post(f"/runs/{fork.pk}/propose/").status_code == 403
    assert client.post(f"/runs/{parent.pk}/fork/", {"pass_number": 2}).status_code == 403


# -- the Done-when's pages: a real coding run, a fork made from its page, compare, propose --------


@pytest.fixture
def catalogued_four(four_pass_recipe, settings):
    settings.RYSH_RECIPES_BRANCH = "main"
    recipes_sync()
    return four_pass_recipe


def test_a_fork_from_its_page_is_compared_and_proposed(catalogued_four):
    recipe = Recipe.objects.get(kind="task", name="four")
    parent = services.run_start(kind="task", name_or_path="four", args=[], provider="scripted", catalogue_only=True)
    parent = drive(parent, per_pass(judge=["NO\nnot yet 1", "NO\nnot yet 2", "NO\nnot yet 3", "NO\nnot yet 4"]))
    assert [p.verdict for p in parent.passes.order_by("number")] == ["NO"] * 4
    admin = login(Client(), make_user("ada", role="admin"))

    page = admin.get(f"/runs/{parent.pk}/fork/?pass=2").content.decode()
    assert "Worst case of the fork" in page and "not paid again" in page
    edited = parent_values(parent)["prompt"].rstrip("\n") + "\nTouch only calc.py.\n"
    form = {**parent_values(parent), "prompt": edited, "pass_number": 2, "action": "start"}
    response = admin.post(f"/runs/{parent.pk}/fork/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    fork = Run.objects.get(forked_from=parent)
    assert response["Location"] == f"/runs/{fork.pk}/"
    assert fork.fork_pass == 2 and fork.fork_edits == {"prompt": edited}
    fork = drive(fork, per_pass(judge=["YES\nfine"]))
    assert fork.cause == "fulfilled"

    page = admin.get(f"/runs/{fork.pk}/compare/").content.decode()
    assert f'A: <a href="/runs/{parent.pk}/">run #{parent.pk}</a>' in page
    assert f'B: <a href="/runs/{fork.pk}/">run #{fork.pk}</a>' in page
    assert '<tr id="compare-pass-3"><td>3</td>' in page and page.count("started after it (not run again)") == 2
    assert "+Touch only calc.py." in page

    admin.post(f"/runs/{fork.pk}/propose/")
    change = ChangeRequest.objects.get()
    assert change.base_text == recipe.latest.text
    rows = [(d.kind, d.text) for d in text_diff(change.base_text, change.proposed_text) if d.kind in ("add", "del")]
    assert rows == [("add", "Touch only calc.py.")]


def test_a_browsers_line_endings_are_no_edit(family):
    parent, _, _ = family
    values = {k: v.replace("\n", "\r\n") + "\r\n" for k, v in parent_values(parent).items()}
    assert edits_from(values, parent).edited() == {}
    values["prompt"] = "Write the report.\r\nTwice.\r\n"
    assert edits_from(values, parent).edited() == {"prompt": "Write the report.\nTwice.\n"}


def test_a_pass_retention_emptied_is_not_offered(family, operator):
    parent, _, _ = family
    Run.objects.filter(pk=parent.pk).update(snapshots_pruned_at=timezone.now())
    page = operator.get(f"/runs/{parent.pk}/").content.decode()
    assert "Fork from here" not in page
    assert 'title="pass 2: its results were removed by retention' in page
    # redoing pass 1 starts from the run's start, which is still there
    assert f'href="/runs/{parent.pk}/fork/?pass=1&amp;redo=1">Redo</a>' in page
    form = operator.get(f"/runs/{parent.pk}/fork/?pass=2").content.decode()
    assert "results were removed by retention" in form and 'id="fork-plan"' not in form


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("until", "", "until: the goal the judge checks cannot be empty"),
        ("budget", "1", "below what one step needs"),
        ("effort", "extreme", "effort: expected one of"),
    ],
)
def test_a_refusal_sits_next_to_its_field_and_nothing_starts(family, operator, field, value, said):
    parent, _, _ = family
    runs = Run.objects.count()
    form = {**parent_values(parent), "pass_number": 2, "action": "start", field: value}
    response = operator.post(f"/runs/{parent.pk}/fork/", form)
    assert response.status_code == 400
    page = response.content.decode()
    error = page[page.index(f'id="id_{field}_error"') :]
    assert said in error[: error.index("</p>")]
    assert Run.objects.count() == runs


def test_the_form_shows_the_worst_case_and_what_the_parent_spent(family, operator):
    parent, _, _ = family
    page = operator.get(f"/runs/{parent.pk}/fork/?pass=2").content.decode()
    assert 'id="fork-plan"' in page
    assert f"Run #{parent.pk} spent 2000 tokens up to that point: not paid again." in page
    assert "Worst case of the fork:" in page
    page = operator.get(f"/runs/{parent.pk}/fork/?pass=3").content.decode()
    assert "Fork from pass 3" in page
    page = operator.get(f"/runs/{parent.pk}/fork/?pass=9").content.decode()
    assert "has no pass 9 to fork from" in page and 'id="fork-plan"' not in page


def test_the_history_page_links_a_family(family, operator):
    parent, fork, grandchild = family
    page = operator.get("/history/").content.decode()
    assert f'href="/runs/{fork.pk}/family/" title="its family as a tree">fork of #{parent.pk}</a>' in page
    assert f'href="/runs/{parent.pk}/family/" title="its family as a tree">forked</a>' in page
