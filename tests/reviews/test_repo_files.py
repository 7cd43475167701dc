"""A package's files and the team's policy file, edited in the browser and reviewed like a recipe
(docs/packages.md, docs/policy.md), over a real git repository: the editor opens a change
request for one file, the review page shows the diff and the reader's verdict, a file that does
not read cannot merge, and the merge is synced into a new PackageVersion / PolicyVersion."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from catalogue.models import Package
from catalogue.sync import recipes_sync
from policies.models import PolicyVersion
from policies.services import policy_change_open
from reviews.models import ChangeRequest
from reviews.repo_files import package_change_open
from runs import services
from tests.catalogue.packages_repo import FIXTURE, packages_repo  # noqa: F401 (fixture)
from tests.conftest import SCRIPT
from tests.recipes_git import login, make_user, work  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

SKILL = (FIXTURE / "SKILL.md").read_text()
MANIFEST = (FIXTURE / "rysh.pkg.yaml").read_text()
SKILL_PATH = ".rysh/packages/test-fixer/SKILL.md"
BETTER = SKILL.replace("description: Fixes the defect a failing test exposes.", "description: Fixes the code.")
NAMELESS = SKILL.replace("name: test-fixer\n", "")


@pytest.fixture
def people(db):
    return login(Client(), make_user("grace")), login(Client(), make_user("linus"))


def test_it_edits_a_skill_in_the_browser_reviews_merges_and_syncs_the_new_version(packages_repo, people):
    grace, linus = people
    page = grace.get("/packages/test-fixer/").content.decode()
    assert 'href="/packages/test-fixer/edit/entry/"' in page and 'href="/packages/test-fixer/edit/manifest/"' in page
    page = grace.get("/packages/test-fixer/edit/entry/").content.decode()
    assert f"Edit {SKILL_PATH}" in page and "You make failing tests pass." in page
    assert 'hx-post="/changes/validate-file/"' in page and "version: 0.2.0" in page  # the package reader's facts

    response = grace.post("/packages/test-fixer/edit/entry/", {"text": BETTER, "message": "Say it shorter"})
    change = ChangeRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/changes/{change.pk}/"
    assert (change.kind, change.name, change.new_path, change.proposed_text) == (
        "package",
        "test-fixer",
        SKILL_PATH,
        BETTER,
    )
    assert f"#{change.pk} Say it shorter" in grace.get("/packages/test-fixer/").content.decode()
    listed = linus.get("/changes/").content.decode()
    assert '<span class="kind kind-package">package</span> <code>test-fixer</code>' in listed

    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "+description: Fixes the code." in page and "-description: Fixes the defect" in page
    assert 'id="file-ok"' in page and 'id="merge-blockers"' not in page
    assert "<th>version</th><td><code>0.2.0</code></td><td><code>0.2.0</code></td>" in page
    page = linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True).content.decode()
    assert "Merged into main and synced." in page and "See the package and its versions" in page

    package = Package.objects.get(name="test-fixer")
    assert package.versions.count() == 2 and package.good == package.latest
    assert package.good.entry_text == BETTER and package.good.valid
    assert package.good.info["agent"]["name"] == "test-fixer"


def test_a_skill_without_a_name_is_refused_by_the_editor_and_cannot_merge(packages_repo, people):
    grace, linus = people
    checked = grace.post(
        "/changes/validate-file/", {"kind": "package", "name": "test-fixer", "path": SKILL_PATH, "text": NAMELESS}
    ).content.decode()
    assert 'data-line="1"' in checked and "missing: an agent&#x27;s SKILL.md names it" in checked
    page = grace.post("/packages/test-fixer/edit/entry/", {"text": NAMELESS, "message": "No name"}).content.decode()
    assert "fix the 1 error shown beside the text first; nothing was saved" in page
    assert not ChangeRequest.objects.exists()

    # from outside the editor (the service does not refuse): the merge gate does
    change = package_change_open(
        user=User.objects.get(username="grace"), name="test-fixer", which="entry", text=NAMELESS
    )
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    where = f"{SKILL_PATH}:1 name: missing"
    assert 'id="file-issues"' in page and where in page
    assert 'id="merge-blockers"' in page
    page = linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True).content.decode()
    assert "Not merged:" in page and where in page
    change.refresh_from_db()
    assert change.state == "open"
    assert Package.objects.get(name="test-fixer").versions.count() == 1


def test_a_manifest_change_shows_the_tools_before_and_after_with_the_missing_one_marked(packages_repo, people):
    grace, linus = people
    wider = MANIFEST.replace("  - glob\n", "  - glob\n  - web_fetch\n").replace('"0.2.0"', '"0.3.0"')
    page = grace.post("/packages/test-fixer/edit/manifest/", {"text": wider, "message": "Fetch"}).content.decode()
    assert "tool &#x27;web_fetch&#x27; is not available here" in page  # the live check, at its line
    change = package_change_open(
        user=User.objects.get(username="grace"), name="test-fixer", which="manifest", text=wider
    )
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "<th>version</th><td><code>0.2.0</code></td><td><code>0.3.0</code></td>" in page
    assert "glob, web_fetch (not available here)" in page and 'id="unavailable-tools"' in page
    assert ".rysh/packages/test-fixer/rysh.pkg.yaml:13 declares_tools: tool 'web_fetch'" in page.replace("&#x27;", "'")


BIG = """---
loop:
  do:
    max_iterations: 6
    budget:
      size: 3b
  while:
    max_iterations: 2
    prompts:
      until: The list has fifty entries.
---
Work on the list.
"""


@pytest.fixture
def big(work, settings, tmp_path):
    """A catalogued recipe that asks for 3b a pass, on the scripted provider, and a policy."""
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    (work.path / ".rysh/policy.yaml").write_text("budget:\n  ceilings:\n    pass: 2b\n")
    (work.path / ".rysh/automations/tasks/big.script.yaml").parent.mkdir(parents=True, exist_ok=True)
    (work.path / ".rysh/automations/tasks/big.script.yaml").write_text(SCRIPT)
    work.commit("Big and a policy", tasks__big=BIG)
    recipes_sync()
    return work


def dry_run_lines() -> list[str]:
    return services.run_start(kind="task", name_or_path="big", args=[], provider="scripted", dry_run=True).lines


def test_a_policy_change_lowering_the_pass_ceiling_shows_it_merges_and_lowers_the_next_run(big, people):
    grace, linus = people
    assert "pass budget lowered 3b -> 2b" in "\n".join(dry_run_lines())
    page = grace.get("/recipes/policy/").content.decode()
    assert 'id="policy-edit" href="/recipes/policy/edit/">Edit .rysh/policy.yaml' in page
    page = grace.get("/recipes/policy/edit/").content.decode()
    assert "Edit .rysh/policy.yaml" in page and "pass ceiling 2b" in page  # the merged rules as they would be
    lowered = "budget:\n  ceilings:\n    pass: 1b\n"
    grace.post("/recipes/policy/edit/", {"text": lowered, "message": "Smaller passes"})
    change = ChangeRequest.objects.get()
    assert (change.kind, change.action, change.new_path) == ("policy", "edit", ".rysh/policy.yaml")
    assert f"#{change.pk} Smaller passes" in grace.get("/recipes/policy/").content.decode()
    assert (
        '<span class="kind kind-policy">policy</span> <code>.rysh/policy.yaml</code>'
        in linus.get("/changes/").content.decode()
    )

    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert (
        'class="del"><code>pass ceiling 2b  (.rysh/policy.yaml:3 budget.ceilings.pass)</code> <span class="muted">(removed)'
        in page
    )
    assert (
        'class="add"><code>pass ceiling 1b  (.rysh/policy.yaml:3 budget.ceilings.pass)</code> <span class="muted">(new)'
        in page
    )
    assert "+    pass: 1b" in page and 'id="file-ok"' in page
    linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha})
    change.refresh_from_db()
    assert change.state == "merged"
    assert PolicyVersion.objects.first().text == lowered
    assert "pass budget lowered 3b -> 1b" in "\n".join(dry_run_lines())


def test_a_broken_policy_change_cannot_merge_and_the_editor_refuses_it(big, people):
    grace, linus = people
    broken = "budget:\n  ceilings:\n    pass: lots\n"
    page = grace.post("/recipes/policy/edit/", {"text": broken, "message": "Lots"}).content.decode()
    assert "nothing was saved" in page and 'data-line="3"' in page
    change = policy_change_open(user=User.objects.get(username="grace"), text=broken, message="Lots")
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert ".rysh/policy.yaml:3 budget.ceilings.pass: expected" in page and 'id="merge-blockers"' in page
    page = linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True).content.decode()
    assert "Not merged:" in page
    change.refresh_from_db()
    assert change.state == "open" and PolicyVersion.objects.first().text.endswith("pass: 2b\n")


def test_the_policy_is_created_when_the_repository_has_none(work, people):
    grace, linus = people
    recipes_sync()
    page = grace.get("/recipes/policy/").content.decode()
    assert ">Create .rysh/policy.yaml</a>" in page
    assert "Create .rysh/policy.yaml" in grace.get("/recipes/policy/edit/").content.decode()
    grace.post("/recipes/policy/edit/", {"text": "bash:\n  deny: ['rm -rf:*']\n", "message": "A policy"})
    change = ChangeRequest.objects.get()
    assert (change.kind, change.action, change.path, change.base_text) == ("policy", "create", "", "")
    page = linus.get(f"/changes/{change.pk}/").content.decode()
    assert "deny bash(rm -rf:*)  (.rysh/policy.yaml:2 bash.deny)" in page
    linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha})
    assert PolicyVersion.objects.first().present


def test_the_author_revises_a_package_change_with_the_package_reader(packages_repo, people):
    grace, _linus = people
    grace.post("/packages/test-fixer/edit/entry/", {"text": BETTER, "message": "Shorter"})
    change = ChangeRequest.objects.get()
    assert grace.get(f"/changes/{change.pk}/edit/")["Location"] == f"/changes/{change.pk}/edit-file/"
    page = grace.post(f"/changes/{change.pk}/edit-file/", {"text": NAMELESS, "message": "x"}).content.decode()
    assert "nothing was saved" in page
    again = BETTER.replace("Fixes the code.", "Fixes code.")
    grace.post(f"/changes/{change.pk}/edit-file/", {"text": again, "message": "Shorter still"})
    change.refresh_from_db()
    assert change.proposed_text == again and change.state == "open"


def test_a_viewer_cannot_edit_and_sees_no_edit_buttons(packages_repo, people):
    viewer = login(Client(), make_user("vera", role="viewer"))
    assert "/edit/entry/" not in viewer.get("/packages/test-fixer/").content.decode()
    assert 'id="policy-edit"' not in viewer.get("/recipes/policy/").content.decode()
    assert viewer.get("/packages/test-fixer/edit/entry/").status_code == 403
    assert viewer.post("/packages/test-fixer/edit/entry/", {"text": BETTER, "message": "x"}).status_code == 403
    assert viewer.get("/recipes/policy/edit/").status_code == 403
    assert viewer.post("/recipes/policy/edit/", {"text": "bash: {}\n"}).status_code == 403
    assert viewer.post("/changes/validate-file/", {"kind": "policy", "text": "x"}).status_code == 403
    assert not ChangeRequest.objects.exists()


def test_every_post_needs_its_csrf_token(packages_repo, people):
    strict = login(Client(enforce_csrf_checks=True), make_user("olga"))
    assert strict.post("/packages/test-fixer/edit/entry/", {"text": BETTER, "message": "x"}).status_code == 403
    assert strict.post("/recipes/policy/edit/", {"text": "bash: {}\n", "message": "x"}).status_code == 403
    assert strict.post("/changes/validate-file/", {"kind": "policy", "text": "x"}).status_code == 403
    assert not ChangeRequest.objects.exists()
    page = strict.get("/packages/test-fixer/edit/entry/").content.decode()
    assert 'name="csrfmiddlewaretoken"' in page


def test_a_package_change_conflicting_with_a_push_is_not_merged_and_nothing_is_lost(packages_repo, people):
    grace, linus = people
    grace.post("/packages/test-fixer/edit/entry/", {"text": BETTER, "message": "Shorter"})
    change = ChangeRequest.objects.get()
    pushed = SKILL.replace("description: Fixes the defect a failing test exposes.", "description: Pushed meanwhile.")
    head = packages_repo.commit("someone else's edit", {"SKILL.md": pushed})
    page = linus.post(f"/changes/{change.pk}/approve/", {"head": change.head_sha}, follow=True).content.decode()
    assert "Not merged: the merge conflicts." in page and f"<li><code>{SKILL_PATH}</code></li>" in page
    change.refresh_from_db()
    assert change.state == "conflict"
    package = Package.objects.get(name="test-fixer")
    assert package.latest.commit_sha == head and package.latest.entry_text == pushed
    page = grace.get(f"/changes/{change.pk}/edit-file/").content.decode()
    assert "Pushed meanwhile." in page  # what the branch has now, to bring into the revision
