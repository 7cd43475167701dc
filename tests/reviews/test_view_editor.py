import pytest

from catalogue.sync import recipes_sync
from reviews.models import ChangeRequest
from tests.recipes_git import BROKEN, git, login, make_user, recipe_text, work  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def editor(client, work):
    recipes_sync()
    return login(client, make_user("grace"))


def test_a_viewer_cannot_open_the_editor_or_propose(client, work):
    recipes_sync()
    login(client, make_user("vera", role="viewer"))
    assert client.get("/recipes/task/report/edit/").status_code == 403
    assert client.post("/recipes/task/report/edit/", {"text": "x", "message": "m"}).status_code == 403
    assert client.post("/recipes/validate/", {"text": "x"}).status_code == 403
    assert client.get("/recipes/new/").status_code == 403
    assert client.post("/recipes/task/report/rename/", {"new_name": "y"}).status_code == 403
    assert client.post("/recipes/task/report/delete/", {}).status_code == 403
    assert ChangeRequest.objects.count() == 0


def test_it_opens_the_editor_with_the_text_and_its_check(editor):
    page = editor.get("/recipes/task/report/edit/").content.decode()
    assert 'name="text"' in page and "Write the report." in page
    assert 'hx-post="/recipes/validate/"' in page
    assert 'hx-trigger="input changed delay:400ms"' in page and 'hx-target="#validation"' in page
    assert "<strong>valid</strong>" in page and "loop enabled=true  maxIter=5" in page


def test_the_live_check_answers_with_errors_at_their_lines_and_never_the_textarea(editor):
    response = editor.post(
        "/recipes/validate/", {"kind": "task", "name": "report", "text": BROKEN}, HTTP_HX_REQUEST="true"
    )
    part = response.content.decode()
    assert response.status_code == 200
    assert '<a href="#recipe-text" class="line" data-line="4"' in part
    assert "<code>loop.do.interval</code>: expected a whole number from 1 to 500, got 900" in part
    assert "<textarea" not in part and "<html" not in part


def test_the_live_check_warns_about_a_goal_the_judge_must_guess(editor):
    text = recipe_text().replace("until: The report exists.", "until: The report is written properly.")
    part = editor.post("/recipes/validate/", {"kind": "task", "name": "report", "text": text}).content.decode()
    assert "<strong>valid</strong>" in part  # a warning, never an error
    assert '<a href="#recipe-text" class="line" data-warn-line="11"' in part  # a link to its line
    assert "line 11</a> loop.while.prompts.until: the goal names nothing the judge can count" in part
    assert 'data-line="11"' not in part  # the gutter paints it as a warning, not an error
    assert "words the judge must guess: &quot;properly&quot;" in part


def test_the_live_check_previews_the_plan_and_the_cost_delta(editor):
    part = editor.post(
        "/recipes/validate/",
        {"kind": "task", "name": "report", "against": "report", "text": recipe_text(size="5b", total="25b")},
    ).content.decode()
    assert "<strong>valid</strong>" in part
    assert "perPass: tokens=1000000" in part
    assert "worst case 1s → 25b, +$10.00" in part


def test_saving_opens_a_change_request_and_leaves_the_branch_alone(editor, work):
    main = work.head()
    response = editor.post(
        "/recipes/task/report/edit/",
        {"text": recipe_text("edited").replace("\n", "\r\n"), "message": "Edit in the browser"},
    )
    change = ChangeRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/changes/{change.pk}/"
    assert work.head() == main
    assert git(work.path, "show", f"{change.head_sha}:.rysh/automations/tasks/report.md") + "\n" == (
        recipe_text("edited")
    )  # CRLF from the browser became LF
    assert change.author.username == "grace" and change.title == "Edit in the browser"


def test_a_refused_save_keeps_what_the_user_typed(editor):
    page = editor.post("/recipes/task/report/edit/", {"text": recipe_text(), "message": "Nothing"})
    assert page.status_code == 200
    text = page.content.decode()
    assert "nothing changed" in text and 'value="Nothing"' in text
    assert ChangeRequest.objects.count() == 0


def test_it_escapes_the_text_in_the_textarea(editor, work):
    hostile = "---\ndescription: x\n---\n</textarea><script>alert(1)</script>\n"
    work.commit("Hostile", tasks__report=hostile)
    recipes_sync()
    page = editor.get("/recipes/task/report/edit/").content.decode()
    assert "</textarea><script>" not in page
    assert "&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    part = editor.post(
        "/recipes/validate/",
        {"kind": "task", "name": "x", "text": "---\ndescription: [\n---\n<script>alert(1)</script>\n"},
    ).content.decode()
    assert "<script>alert(1)</script>" not in part


def test_a_new_recipe_starts_from_a_template(editor, work):
    page = editor.get("/recipes/new/?template=task-loop&kind=task").content.decode()
    assert "takeover_prompt" in page and 'name="name"' in page
    response = editor.post(
        "/recipes/new/", {"kind": "task", "name": "fresh", "message": "Add fresh", "text": recipe_text("fresh")}
    )
    change = ChangeRequest.objects.get()
    assert response["Location"] == f"/changes/{change.pk}/"
    assert (change.action, change.name, change.base_text) == ("create", "fresh", "")


def test_a_new_recipe_needs_a_good_name(editor):
    page = editor.post(
        "/recipes/new/", {"kind": "task", "name": "Bad Name", "message": "m", "text": recipe_text()}
    ).content.decode()
    assert "expected a recipe name of lowercase letters" in page and "nothing was saved" in page
    assert ChangeRequest.objects.count() == 0


def test_rename_and_delete_open_change_requests(editor):
    response = editor.post("/recipes/task/report/rename/", {"new_name": "summary", "message": ""})
    rename = ChangeRequest.objects.get()
    assert response["Location"] == f"/changes/{rename.pk}/"
    assert (rename.action, rename.new_name, rename.title) == ("rename", "summary", "Rename task/report to task/summary")
    editor.post("/recipes/web/scout/delete/", {"message": "Gone"})
    assert ChangeRequest.objects.get(action="delete").title == "Gone"
    response = editor.post("/recipes/task/report/rename/", {"new_name": "scout/../x"}, follow=True)
    assert "is not a recipe name" in response.content.decode()


def test_it_will_not_propose_a_recipe_that_does_not_parse(editor):
    page = editor.post("/recipes/task/report/edit/", {"text": BROKEN, "message": "Broken"})
    text = page.content.decode()
    assert "fix the 1 error shown beside the text first; nothing was saved" in text
    assert "interval: 900" in text  # what the user typed is still there
    assert ChangeRequest.objects.count() == 0
