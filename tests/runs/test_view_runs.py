"""Dashboard, run page, controls, history and CSV, the results viewer (Django test client)."""

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from runs.models import Pass, Run, RunEvent, Step
from tests.conftest import drive
from tests.fake_model import FakeModel, tool

pytestmark = pytest.mark.django_db

ONE_PASS = """
    ---
    description: "<script>alert('d')</script>"
    loop:
      do:
        budget:
          size: 20p
          watch:
            takeover_prompt: Land it.
    ---
    Work.
"""


def user_with(role: str) -> User:
    user = User.objects.create_user(f"{role}-user", password="x")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def client_for(user, csrf=False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


@pytest.fixture
def finished(start):
    hostile = "<img src=x onerror=alert(1)>"
    run = start(ONE_PASS)
    return drive(
        run,
        FakeModel(
            task=[
                {
                    "text": f"saving {hostile}",
                    "tools": [tool("save_result", filename="notes.md", content=f"# Notes\n\n{hostile}\n")],
                },
                {"text": "Done."},
            ]
        ),
    )


def test_it_needs_a_login_for_every_page(client, finished):
    for url in ("/", f"/runs/{finished.pk}/", "/history/", "/history.csv", f"/runs/{finished.pk}/files/notes.md"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url


def test_it_shows_live_and_recent_runs_on_the_dashboard(start, finished):
    active = start(ONE_PASS, name="other")
    page = client_for(user_with("viewer")).get("/").content.decode()
    assert f'id="run-row-{active.pk}"' in page and "queued" in page
    assert f'id="history-row-{finished.pk}"' in page and "done" in page
    assert 'ws-connect="/ws/live/"' in page
    assert "data-control-url" not in page  # a viewer sees no controls


def test_it_shows_controls_that_apply_to_operators(start):
    run = start(ONE_PASS)
    page = client_for(user_with("operator")).get("/").content.decode()
    assert f'data-control-url="/runs/{run.pk}/stop/"' in page and f'data-control-url="/runs/{run.pk}/cancel/"' in page
    assert f"/runs/{run.pk}/continue/" not in page and f"/runs/{run.pk}/land/" not in page


def test_it_escapes_model_text_results_and_recipe_text_on_the_run_page(finished):
    page = client_for(user_with("viewer")).get(f"/runs/{finished.pk}/").content.decode()
    assert "<img src=x onerror=alert(1)>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    viewer = client_for(user_with("operator")).get(f"/runs/{finished.pk}/files/notes.md").content.decode()
    assert "<img src=x" not in viewer and "&lt;img src=x onerror=alert(1)&gt;" in viewer


def test_it_refuses_a_results_path_outside_the_folder(finished):
    client = client_for(user_with("viewer"))
    assert client.get(f"/runs/{finished.pk}/files/../../../etc/passwd").status_code == 404
    assert client.get(f"/runs/{finished.pk}/files/missing.md").status_code == 404


def test_it_lets_only_operators_control_runs(start):
    run = start(ONE_PASS)
    assert client_for(user_with("viewer")).post(f"/runs/{run.pk}/cancel/").status_code == 403
    assert client_for(user_with("editor")).post(f"/runs/{run.pk}/cancel/").status_code == 403
    response = client_for(user_with("operator")).post(f"/runs/{run.pk}/cancel/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "cancelled before it started; state preserved" in response.content.decode()
    run.refresh_from_db()
    assert run.state_label == "paused(cancelled)"


def test_it_requires_csrf_on_every_control(start):
    run = start(ONE_PASS)
    client = client_for(user_with("operator"), csrf=True)
    for action in ("stop", "cancel", "continue", "resume", "land"):
        assert client.post(f"/runs/{run.pk}/{action}/").status_code == 403
    assert client.get(f"/runs/{run.pk}/stop/").status_code == 405  # POST only


def test_it_gives_both_of_two_simultaneous_clicks_a_consistent_answer(start):
    run = start(ONE_PASS)
    alice, bob = client_for(user_with("operator")), client_for(User.objects.create_superuser("root", password="x"))
    first = alice.post(f"/runs/{run.pk}/continue/", HTTP_HX_REQUEST="true").content.decode()
    assert "nothing to continue" in first  # queued: nothing to continue
    a = alice.post(f"/runs/{run.pk}/stop/", HTTP_HX_REQUEST="true").content.decode()
    b = bob.post(f"/runs/{run.pk}/stop/", HTTP_HX_REQUEST="true").content.decode()
    assert f"run #{run.pk} stopped" in a
    assert "has already finished (stopped by user)" in b
    run.refresh_from_db()
    assert run.cause == "stopped by user" and RunEvent.objects.filter(run=run, kind="finished").count() == 1


def test_it_resumes_from_the_page_and_goes_to_the_new_run(finished):
    response = client_for(user_with("operator")).post(f"/runs/{finished.pk}/resume/", HTTP_HX_REQUEST="true")
    new = Run.objects.exclude(pk=finished.pk).get()
    assert response.status_code == 200 and response["HX-Redirect"] == f"/runs/{new.pk}/"  # htmx follows it
    assert new.resumed_from == finished


def test_it_filters_history_and_exports_csv(start, finished):
    client = client_for(user_with("viewer"))
    page = client.get("/history/?cause=done&kind=task").content.decode()
    assert f'id="history-row-{finished.pk}"' in page
    assert f'id="history-row-{finished.pk}"' not in client.get("/history/?cause=fulfilled").content.decode()
    rows = b"".join(client.get("/history.csv?kind=task").streaming_content).decode().splitlines()
    assert rows[0].startswith("run,ended,kind,recipe,duration,passes,tokens_counted")
    assert rows[1].startswith(f"{finished.pk},") and rows[1].endswith(",scripted,done")


def test_it_keeps_the_dashboard_query_count_flat(start, django_assert_max_num_queries):
    client = client_for(user_with("viewer"))
    for i in range(3):
        start(ONE_PASS, name=f"r{i}")
    with django_assert_max_num_queries(12):
        client.get("/")
    for i in range(3, 15):
        start(ONE_PASS, name=f"r{i}")
    with django_assert_max_num_queries(12):
        client.get("/")


def test_it_shows_only_this_runs_files_and_report(start, finished):
    import os
    import time as clock

    out = Path(finished.output_dir)
    old = out / "old.md"
    old.write_text("from an earlier run")
    past = clock.time() - 3600
    os.utime(old, (past, past))
    client = client_for(user_with("viewer"))
    page = client.get(f"/runs/{finished.pk}/").content.decode()
    assert "notes.md" in page and "old.md" not in page
    (out / "run-report.md").write_text("# Run report: someone else's run")
    page = client.get(f"/runs/{finished.pk}/").content.decode()
    assert f"Run report: task/job (run #{finished.pk})" in page and "someone else" not in page


def test_it_renders_a_run_read_between_a_reservation_and_its_total(start):
    """The run row was read before the engine added a call's reservation to its total: the
    page must still render (settled spend comes from settled steps, never total - reserved)."""
    run = start(ONE_PASS)
    Run.objects.filter(pk=run.pk).update(state="running", pass_number=1, tokens_counted=0)
    the_pass = Pass.objects.create(run=run, number=1, messages=[])
    Step.objects.create(
        run_pass=the_pass, number=1, leg="task", model="m", max_tokens=256, reserved_tokens=6947
    )  # pending, not in tokens_counted yet
    client = client_for(user_with("viewer"))
    for url in ("/", f"/runs/{run.pk}/"):
        page = client.get(url).content.decode()
        assert "job 0p/" in page and "plus 6947 reserved for the call in flight" in page


def test_it_refuses_a_result_file_that_links_outside_the_folder(finished, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("not a result")
    (Path(finished.output_dir) / "link.md").symlink_to(secret)
    client = client_for(user_with("viewer"))
    assert client.get(f"/runs/{finished.pk}/files/link.md").status_code == 404
    assert client.get(f"/runs/{finished.pk}/files/{secret}").status_code == 404  # absolute
    assert client.get(f"/runs/{finished.pk}/files/notes.md").status_code == 200


def test_it_serves_a_runs_videos_and_nothing_beside_them(finished, settings, tmp_path):
    settings.RYSH_VIDEOS_DIR = tmp_path / "videos"
    folder = settings.RYSH_VIDEOS_DIR / str(finished.pk)
    folder.mkdir(parents=True)
    (folder / "pass-1.webm").write_bytes(b"webm")
    (folder / "notes.txt").write_text("not a video")
    (tmp_path / "other.webm").write_bytes(b"someone else's")
    (folder / "escape.webm").symlink_to(tmp_path / "other.webm")
    client = client_for(user_with("viewer"))
    response = client.get(f"/runs/{finished.pk}/videos/pass-1.webm")
    assert response.status_code == 200 and response["Content-Type"] == "video/webm"
    for name in ("notes.txt", "escape.webm", "..%2Fother.webm", "missing.webm"):
        assert client.get(f"/runs/{finished.pk}/videos/{name}").status_code == 404, name


def test_it_varies_the_live_pages_on_hx_request(finished):
    client = client_for(user_with("viewer"))
    for url in ("/", f"/runs/{finished.pk}/"):
        page, part = client.get(url), client.get(url, HTTP_HX_REQUEST="true")
        assert "HX-Request" in page["Vary"] and "HX-Request" in part["Vary"], url
        assert "<html" in page.content.decode() and "<html" not in part.content.decode(), url


def test_it_goes_back_after_a_control_only_to_a_page_of_this_site(start):
    run = start(ONE_PASS)
    client = client_for(user_with("operator"))
    assert client.post(f"/runs/{run.pk}/continue/", {"next": "/history/"})["Location"] == "/history/"
    for elsewhere in ("https://evil.example/", "//evil.example/x"):
        response = client.post(f"/runs/{run.pk}/continue/", {"next": elsewhere})
        assert response["Location"] == f"/runs/{run.pk}/", elsewhere
