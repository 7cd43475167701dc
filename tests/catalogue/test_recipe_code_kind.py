"""rysh's `code` kind (docs/recipes.md): recipes under `.rysh/automations/codes/` are tasks
anchored to a folder of the repository — a working copy always, the repository's root unless
`workdir:` says otherwise; the task-only keys apply, the web-only ones are refused."""

from pathlib import Path

import pytest
from django.core.management import call_command

from catalogue.models import Recipe
from catalogue.recipe import RecipeError, parse_recipe
from catalogue.spec import Kind
from catalogue.sync import recipes_sync
from catalogue.workdir import list_recipes
from tests.recipes_git import git, work  # noqa: F401 (fixture)

CODE = ".rysh/automations/codes/softdev.md"


def errors(text: str, path: str = CODE) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(text, path=path)
    return [str(issue) for issue in caught.value.issues]


def test_a_file_under_codes_is_a_code_recipe_working_in_the_root_by_default():
    spec = parse_recipe("Implement it.", path=CODE)
    assert (spec.kind, spec.target, spec.folder) == (Kind.CODE, "code/softdev", "codes")
    assert (spec.workdir, spec.workdir_line) == (".", None)
    assert spec.output_dir == "codes/softdev/results"


def test_it_reads_its_own_workdir_and_the_keys_of_a_coding_loop():
    text = '---\nworkdir: "pkg/"\nbase: main\nsetup: ["go mod download"]\nuntil_command: go test ./...\n---\nGo.\n'
    spec = parse_recipe(text, path=CODE)
    assert (spec.workdir, spec.workdir_line, spec.base) == ("pkg", 2, "main")
    assert (spec.setup, spec.until_command) == (("go mod download",), "go test ./...")


def test_kind_code_in_the_file_says_so_anywhere():
    spec = parse_recipe("---\nkind: code\n---\nGo.\n", path="softdev.md")
    assert (spec.kind, spec.workdir) == (Kind.CODE, ".")


def test_the_command_may_ask_for_it_by_kind_or_folder():
    assert parse_recipe("Go.", path="softdev.md", kind="code").kind is Kind.CODE
    assert parse_recipe("Go.", path="softdev.md", kind="codes").kind is Kind.CODE


@pytest.mark.parametrize("key", ["url: https://example.com", "web_read: text", "record: true", "web_profile: me"])
def test_the_web_only_keys_are_refused_at_their_line(key):
    found = errors(f"---\ndescription: x\n{key}\n---\nGo.\n")
    assert found == [f"softdev.md:3 {key.split(':')[0]}: applies to web recipes only (this is a code recipe)"]


def test_a_bad_workdir_is_refused_not_replaced_by_the_root():
    assert errors('---\nworkdir: "../x"\n---\nGo.\n')[0].startswith("softdev.md:2 workdir:")


def test_the_folder_and_the_file_must_agree():
    found = errors("---\nkind: task\n---\nGo.\n")
    assert "the kinds disagree: the file is under .rysh/automations/codes; the file says kind: task" in found[0]


def test_a_results_folder_of_another_code_recipe_is_refused():
    found = errors("---\noutput_dir: codes/other/results\n---\nGo.\n")
    assert "the results folder of another recipe (codes/other)" in found[0]
    assert "or a folder outside webs/, tasks/ and codes/" in found[0]


# -- from git: rysh's own softdev-loop, as published, synced from codes/ -------------------------

SOFTDEV = (Path(__file__).resolve().parents[1] / "fixtures" / "softdev-loop.md").read_text(encoding="utf-8")


@pytest.fixture
def synced(work):
    work.write("codes/softdev-loop.md", SOFTDEV)
    work.commit("rysh's softdev-loop, verbatim")
    recipes_sync()
    return work


@pytest.mark.django_db
def test_rysh_softdev_loop_syncs_from_codes_as_a_code_recipe(synced):
    recipe = Recipe.objects.get(kind="code", name="softdev-loop")
    assert (recipe.target, recipe.good_id) == ("code/softdev-loop", recipe.latest_id)
    assert recipe.good.path == ".rysh/automations/codes/softdev-loop.md" and recipe.good.text == SOFTDEV
    assert recipe.good.errors == [] and recipe.good.spec["workdir"] == "."
    assert recipe.good.spec["args"] == ["goal"] and recipe.good.plan["passes"] == 5
    assert [(f.kind, f.name) for f in list_recipes(synced.path)] == [
        (Kind.CODE, "softdev-loop"),
        (Kind.TASK, "report"),
        (Kind.WEB, "scout"),
    ]


@pytest.mark.django_db
def test_the_recipe_list_offers_the_code_kind_and_filters_by_it(synced, admin_client):
    page = admin_client.get("/recipes/").content.decode()
    assert '<option value="code" >code</option>' in page and 'href="/recipes/code/softdev-loop/"' in page
    only = admin_client.get("/recipes/?kind=code").content.decode()
    assert 'href="/recipes/code/softdev-loop/"' in only and "/recipes/task/report/" not in only


@pytest.mark.django_db
def test_auto_code_check_reads_it_and_says_it_is_valid(synced, capsys):
    call_command("auto", "code", "check", "softdev-loop", "add a sum command")
    out = capsys.readouterr().out
    assert "ok: code/softdev-loop is valid" in out and "{{workdir}}" not in out


@pytest.mark.django_db
def test_the_editor_offers_a_code_recipe_from_its_starter(work, admin_client):
    page = admin_client.get("/recipes/new/?kind=code").content.decode()
    assert '<option value="code" selected>code</option>' in page
    assert "workdir: &quot;.&quot;" in page and "You work in {{workdir}}" in page


@pytest.mark.django_db
def test_a_coding_loop_wears_a_badge_with_its_workdir_and_base_on_the_list_and_its_page(synced, admin_client):
    git(synced.path, "branch", "release")  # a base that names a branch of the repository
    synced.write("tasks/fix.md", '---\nworkdir: "."\nbase: release\n---\nFix it.\n')
    synced.commit("a task that is a coding loop, from the release branch")
    recipes_sync()
    rows = admin_client.get("/recipes/").content.decode()
    softdev = rows.partition('id="recipe-code-softdev-loop"')[2].partition("</tr>")[0]
    assert "coding loop · <code>.</code> @ <code>main</code>" in softdev  # no base: the recipes branch
    fix = rows.partition('id="recipe-task-fix"')[2].partition("</tr>")[0]
    assert "coding loop · <code>.</code> @ <code>release</code>" in fix
    report = rows.partition('id="recipe-task-report"')[2].partition("</tr>")[0]
    assert "coding loop" not in report  # a plain task has no copy
    page = admin_client.get("/recipes/code/softdev-loop/").content.decode()
    assert 'id="coding-loop"' in page and "in ., starting from main (the recipes branch)" in page
    assert 'id="coding-loop"' not in admin_client.get("/recipes/task/report/").content.decode()
