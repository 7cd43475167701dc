"""The run page's Changes section, the diff page, the patch, keep and discard on the web."""

import subprocess

import pytest

from audit.models import AuditEntry
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.runs.test_view_runs import client_for, user_with
from tests.workspaces.conftest import FIX
from workspaces.models import Workspace, WorkspaceState, installation_key

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert('x')</script>"


@pytest.fixture
def fixed(start_fix):
    model = FakeModel(
        task=[
            {"text": "fix", "tools": [tool("edit", **FIX)]},
            {"text": "note", "tools": [tool("file_write", path="notes.md", content=f"{HOSTILE}\n" + "line\n" * 900)]},
            {"text": "Done."},
        ]
    )
    return drive(start_fix(), model)


def test_the_run_page_shows_the_diff_stat_and_the_copy(fixed):
    page = client_for(user_with("viewer")).get(f"/runs/{fixed.pk}/").content.decode()
    assert 'id="run-changes"' in page and "<code>pkg/calc.py</code>" in page and "pkg/notes.md" in page
    assert f"rysh/fix/{installation_key()}-run-{fixed.pk}" in page and "Download .patch" in page
    assert "Keep</button>" not in page  # a viewer reads, an editor keeps


def test_an_editor_sees_keep_and_discard_on_a_finished_run(fixed):
    page = client_for(user_with("editor")).get(f"/runs/{fixed.pk}/").content.decode()
    assert "Keep</button>" in page and "Discard</button>" in page


def test_the_diff_page_is_escaped_highlighted_and_paged(fixed):
    client = client_for(user_with("viewer"))
    page = client.get(f"/runs/{fixed.pk}/changes/").content.decode()
    assert HOSTILE not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert '<span class="d-add">+    return sum(values) / len(values)</span>' in page
    assert '<span class="d-del">-    return sum(values) / (len(values) - 1)</span>' in page
    assert "page 1 of 3" in page
    second = client.get(f"/runs/{fixed.pk}/changes/?page=2").content.decode()
    assert "page 2 of 3" in second and "d-add" in second
    one_pass = client.get(f"/runs/{fixed.pk}/changes/?pass=1", HTTP_HX_REQUEST="true").content.decode()
    assert one_pass.startswith('<div id="diff">') and "<strong>pass 1</strong>" in one_pass


def test_the_patch_applies_to_the_armed_commit(fixed, code_repo, tmp_path):
    response = client_for(user_with("viewer")).get(f"/runs/{fixed.pk}/changes.patch")
    assert response["Content-Disposition"] == f'attachment; filename="run-{fixed.pk}.patch"'
    patch = tmp_path / "run.patch"
    patch.write_bytes(response.content)
    checked = subprocess.run(["git", "-C", str(code_repo), "apply", "--check", str(patch)], capture_output=True)
    assert checked.returncode == 0, checked.stderr


def test_pages_need_a_login_and_keep_needs_an_editor_and_csrf(fixed):
    from django.test import Client

    assert Client().get(f"/runs/{fixed.pk}/changes/").status_code == 302
    assert Client().get(f"/runs/{fixed.pk}/changes.patch").status_code == 302
    assert client_for(user_with("operator")).post(f"/runs/{fixed.pk}/workspace/keep/").status_code == 403
    editor = user_with("editor")
    assert client_for(editor, csrf=True).post(f"/runs/{fixed.pk}/workspace/keep/").status_code == 403
    assert client_for(editor).get(f"/runs/{fixed.pk}/workspace/keep/").status_code == 405
    assert Workspace.objects.get(run=fixed).state == WorkspaceState.ACTIVE


def test_an_editor_keeps_from_the_page_and_the_buttons_follow_the_copy(fixed, code_repo):
    editor = user_with("editor")
    client = client_for(editor)
    answer = client.post(f"/runs/{fixed.pk}/workspace/keep/", HTTP_HX_REQUEST="true").content.decode()
    assert "kept as" in answer and 'id="run-changes"' in answer
    workspace = Workspace.objects.get(run=fixed)
    assert workspace.state == WorkspaceState.KEPT and workspace.kept_by == editor
    branch = f"rysh/fix/{installation_key()}-run-{fixed.pk}"
    page = client.get(f"/runs/{fixed.pk}/").content.decode()
    assert f"git fetch {code_repo} {branch}" in page
    assert f"Kept as <code>{workspace.kept_commit[:8]}</code> on <code>{branch}</code>" in page
    assert "Keep</button>" not in page and "Discard</button>" not in page  # kept: nothing to press
    answer = client.post(f"/runs/{fixed.pk}/workspace/discard/", HTTP_HX_REQUEST="true").content.decode()
    assert "not discarded: its work was kept as" in answer and f"git -C {code_repo} branch -D {branch}" in answer
    assert Workspace.objects.get(run=fixed).state == WorkspaceState.KEPT
    actions = AuditEntry.objects.filter(action__startswith="workspace.").values_list("action", flat=True)
    assert list(actions) == ["workspace.keep"]


def test_a_discarded_copy_keeps_its_stat_and_offers_nothing(fixed):
    client = client_for(user_with("editor"))
    client.post(f"/runs/{fixed.pk}/workspace/discard/")
    assert Workspace.objects.get(run=fixed).state == WorkspaceState.DISCARDED
    gone = client.get(f"/runs/{fixed.pk}/changes/").content.decode()
    assert "No diff to show" in gone and "pkg/calc.py" in gone  # the stat stays
    page = client.get(f"/runs/{fixed.pk}/").content.decode()
    assert "Keep</button>" not in page and "Discard</button>" not in page


def test_a_run_without_workdir_has_no_changes_section(start):
    run = drive(start("Just write.\n"), FakeModel())
    viewer = client_for(user_with("viewer"))
    assert 'id="run-changes"' not in viewer.get(f"/runs/{run.pk}/").content.decode()
    assert viewer.get(f"/runs/{run.pk}/changes/").status_code == 404
