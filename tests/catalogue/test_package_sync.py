"""rysh's packages synced from a real git recipes repository (docs/packages.md): a package and
its versions; a broken SKILL.md never replaces the last good version; the pages list them."""

import shutil

import pytest
from django.core.management import call_command

from catalogue.models import Package
from catalogue.package_selectors import package_list
from tests.catalogue.packages_repo import FIXTURE, packages_repo  # noqa: F401 (fixture)
from tests.runs.test_view_runs import client_for, user_with

pytestmark = pytest.mark.django_db

SKILL = (FIXTURE / "SKILL.md").read_text()
MANIFEST = (FIXTURE / "rysh.pkg.yaml").read_text()


def test_it_syncs_a_package_folder_as_a_package_with_its_version(packages_repo):
    package = Package.objects.get(name="test-fixer")
    version = package.good
    assert package.latest == version and version.valid and not package.archived
    assert version.author == "Ada Outside <ada@example.com>"
    assert version.message == "code and the test-fixer agent"
    assert version.entry_path == "SKILL.md" and version.entry_text == SKILL
    assert version.label == "@team/test-fixer@0.2.0"
    assert version.info["type"] == "agent" and version.info["evals"] == ["fix-mean"]
    assert version.info["agent"] == {
        "name": "test-fixer",
        "model": "claude-sonnet-5-5",
        "worktree": True,
        "auto_approve": True,
    }


def test_a_sync_with_nothing_changed_in_the_folder_adds_no_version(packages_repo):
    (packages_repo.path / "README.md").write_text("elsewhere\n")
    packages_repo.commit("a file outside the package")
    assert Package.objects.get(name="test-fixer").versions.count() == 1


def test_a_broken_skill_never_replaces_the_last_good_version(packages_repo):
    good = Package.objects.get(name="test-fixer").good
    sha = packages_repo.commit("drop the name", {"SKILL.md": SKILL.replace("name: test-fixer\n", "")})
    package = Package.objects.get(name="test-fixer")
    assert package.good == good
    assert package.latest.commit_sha == sha and not package.latest.valid
    assert package.latest.errors == [
        "SKILL.md:1 name: missing: an agent's SKILL.md names it in its front matter (name: ...)"
    ]
    fixed = packages_repo.commit("fixed", {"SKILL.md": SKILL.replace("claude-sonnet-5-5", "claude-opus-5-5")})
    package.refresh_from_db()
    assert package.good == package.latest and package.good.commit_sha == fixed
    assert package.good.info["agent"]["model"] == "claude-opus-5-5"


def test_a_tool_we_lack_makes_the_version_invalid_and_is_named(packages_repo):
    packages_repo.commit("a tool we lack", {"rysh.pkg.yaml": MANIFEST + "  - symbol_search\n"})
    [row] = package_list()
    assert row.runnable and row.broken
    assert row.errors[0].startswith("rysh.pkg.yaml:13 declares_tools: tool 'symbol_search' is not available here")
    assert row.unavailable == ("symbol_search",)


def test_a_missing_entry_is_an_invalid_version(packages_repo):
    packages_repo.commit("no skill", {"SKILL.md": None})
    package = Package.objects.get(name="test-fixer")
    assert package.latest.errors[0].startswith("rysh.pkg.yaml:5 entry: 'SKILL.md' is not in the package folder")
    assert package.good.valid


def test_a_deleted_folder_archives_the_package(packages_repo):
    shutil.rmtree(packages_repo.package)
    packages_repo.commit("remove the package")
    assert Package.objects.get(name="test-fixer").archived
    assert package_list() == []


def test_the_list_page_shows_the_package_its_tools_and_evals(packages_repo):
    page = client_for(user_with("viewer")).get("/packages/").content.decode()
    assert 'id="package-test-fixer"' in page
    assert "@team/test-fixer@0.2.0" in page and "0.2.0" in page and "agent" in page
    assert "Makes a failing test pass by fixing the code it tests, never the test" in page
    assert "<code" in page and ">file_read</code>" in page
    assert "1: fix-mean" in page
    assert 'href="/packages/"' in page  # in the nav


def test_the_list_page_marks_a_tool_we_lack(packages_repo):
    packages_repo.commit("a tool we lack", {"rysh.pkg.yaml": MANIFEST + "  - symbol_search\n"})
    page = client_for(user_with("viewer")).get("/packages/").content.decode()
    assert (
        'class="error unavailable">symbol_search</code> <span class="error small">(not available here)</span>' in page
    )


def test_the_package_page_renders_the_skill_and_offers_the_run_form_to_operators(packages_repo):
    page = client_for(user_with("operator")).get("/packages/test-fixer/").content.decode()
    assert "<li>Run the tests and read the first failure.</li>" in page
    assert "name: test-fixer" not in page  # the front matter is shown as facts, not as text
    assert "claude-sonnet-5-5" in page and "works in its own working copy" in page
    assert 'id="package-run"' in page and 'name="prompt"' in page and 'name="budget"' in page
    viewer = client_for(user_with("viewer")).get("/packages/test-fixer/").content.decode()
    assert 'id="package-run"' not in viewer


def test_the_pages_need_a_login(packages_repo, client):
    assert client.get("/packages/").status_code == 302
    assert client.get("/packages/test-fixer/").status_code == 302
    assert client.post("/packages/test-fixer/run/", {"prompt": "x"}).status_code == 302


def test_auto_agent_list_prints_the_packages(packages_repo, capsys):
    call_command("auto", "agent", "list")
    out = capsys.readouterr().out
    assert "test-fixer" in out and "0.2.0" in out and "bash,file_read,edit,grep,glob" in out


def test_auto_eval_finds_a_packages_cases_by_its_name(packages_repo):
    from cli.evals import _path_or_target
    from evals.planning import arm_case, read_path
    from evals.services import suite_plan

    assert _path_or_target("test-fixer") == (str(packages_repo.package), None)
    assert _path_or_target("task/report") == (None, "task/report")
    assert _path_or_target("no-such-package") == (None, "no-such-package")
    plan = suite_plan(target=None, path=str(packages_repo.package), case=None)
    assert any("fix-mean" in line for line in plan.lines)
    # run with the agent's own instructions and model, not the built-in agent
    read = read_path(str(packages_repo.package))
    assert read.kind == "code" and "model: claude-sonnet-5-5" in read.text
    assert "You make failing tests pass." in read.text and "Do the task of this eval case, below." in read.text
    spec, _plan, overrides = arm_case(read, read.cases[0])
    assert spec.prompt.endswith("The task of this case:\nFix the failing test in pkg/.")
    assert overrides["until"] == "the test passes because the code was fixed"


def test_the_package_page_shows_what_the_newest_version_changed(packages_repo):
    packages_repo.commit("a newer model", {"SKILL.md": SKILL.replace("claude-sonnet-5-5", "claude-opus-5-5")})
    page = client_for(user_with("viewer")).get("/packages/test-fixer/").content.decode()
    changed = page.split('id="newest-change"')[1].split("</section>")[0]
    assert "<code>SKILL.md</code>" in changed and "a newer model" in changed
    assert "<code>-model: claude-sonnet-5-5</code>" in changed and "<code>+model: claude-opus-5-5</code>" in changed
    assert "rysh.pkg.yaml" not in changed  # the manifest did not change
