"""Per-pass result snapshots (runs/snapshots.py): kept by content, never changed by a later run,
read by the run page, the file viewer, the report and the judge; pruned by retention."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.models import Schedule
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ops.apps import RETENTION_SCHEDULE
from runs import selectors
from runs.models import Pass, PassResult, ResultBlob, Run
from runs.results import snapshots
from runs.results.report import render_report
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.runs.test_view_runs import client_for, user_with

pytestmark = pytest.mark.django_db

LOOP = """
    ---
    loop:
      do:
        max_iterations: 10
        budget:
          size: 30p
      while:
        max_iterations: 2
        prompts:
          until: results.md lists three titles.
    ---
    Write the titles to results.md.
"""


class Saving(FakeModel):
    """Pass N saves contents[N-1] to `name`; the judge says NO until the last pass."""

    def __init__(self, *contents: str, name: str = "results.md"):
        super().__init__(judge=["NO\nnot yet"] * (len(contents) - 1) + ["YES\nthree titles"])
        self.contents, self.name = contents, name

    def complete(self, request):
        if request.purpose == "task":
            content = self.contents[request.pass_number - 1]
            save = tool("save_result", filename=self.name, content=content)
            self.turns["task"] = [{"text": "saving", "tools": [save]}, {"text": "Done."}]
        return super().complete(request)


def one_pass_run(start, content: str) -> Run:
    return drive(
        start(LOOP),
        FakeModel(
            task=[
                {"text": "s", "tools": [tool("save_result", filename="results.md", content=content)]},
                {"text": "Done."},
            ],
            judge=["YES\nlisted"],
        ),
    )


def viewer():
    user = User.objects.filter(username="viewer-user").first() or user_with("viewer")
    return client_for(user)


def page_file(run: Run, name: str, **query) -> str:
    response = viewer().get(f"/runs/{run.pk}/files/{name}", query)
    assert response.status_code == 200, response
    return response.content.decode()


def test_it_keeps_what_each_pass_saved_even_after_a_later_run_overwrites_the_file(start):
    first = one_pass_run(start, "first run: A, B, C")
    report_before = render_report(first)
    second = one_pass_run(start, "second run: X, Y, Z")
    folder = Path(first.output_dir)
    assert folder == Path(second.output_dir) and (folder / "results.md").read_text() == "second run: X, Y, Z"
    assert "first run: A, B, C" in page_file(first, "results.md")
    assert "second run: X, Y, Z" not in page_file(first, "results.md")
    assert render_report(first) == report_before  # the old run's report names what it kept
    kept = snapshots.judged_result(first.passes.get())
    assert kept.blob.sha256[:12] in report_before and "results.md" in report_before
    assert [f["name"] for f in selectors.run_result_files(first)] == ["results.md"]
    page = viewer().get(f"/runs/{first.pk}/").content.decode()
    assert f"/runs/{first.pk}/files/results.md?pass=1" in page and "kept at the end of pass 1" in page


def test_each_pass_keeps_its_own_version_and_the_page_links_to_the_newest(start):
    run = drive(start(LOOP), Saving("one title", "three titles: a b c"))
    assert run.cause == "fulfilled" and run.passes.count() == 2
    assert "one title" in page_file(run, "results.md", **{"pass": "1"})
    assert "three titles" in page_file(run, "results.md", **{"pass": "2"})
    assert "three titles" in page_file(run, "results.md")
    files = selectors.run_result_files(run)
    assert files == [{"name": "results.md", "size": len("three titles: a b c"), "pass": 2, "kept": True}]
    assert viewer().get(f"/runs/{run.pk}/files/results.md", {"pass": "3"}).status_code == 404


def test_the_judge_reads_the_pass_snapshot(start):
    run = drive(start(LOOP), Saving("one title", "three titles: a b c"))
    model_saw = [p for p in run.passes.order_by("number")]
    assert [snapshots.judge_input(p) for p in model_saw] == [
        ("results.md", "one title"),
        ("results.md", "three titles: a b c"),
    ]


def test_the_judge_is_sent_the_snapshot_not_the_folder_as_it_is_later(start, monkeypatch):
    """Between the pass's end and the judge's call, the folder changes (another run writing
    the same name): the judge reads what the pass kept."""
    real = snapshots.snapshot_pass

    def then_overwrite(run_pass, folder, *, since):
        kept = real(run_pass, folder, since=since)
        (Path(folder) / "results.md").write_text("OVERWRITTEN by someone else")
        return kept

    monkeypatch.setattr(snapshots, "snapshot_pass", then_overwrite)
    model = Saving("three titles: a b c")
    drive(start(LOOP), model)
    judged = [r for r in model.requests if r.purpose == "judging"]
    text = judged[0].messages[0]["content"][0]["text"]
    assert "three titles: a b c" in text and "OVERWRITTEN" not in text


def test_an_unchanged_file_is_stored_once_however_many_passes_keep_it(start, snapshots_root, tmp_path):
    run = start(LOOP)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "data.bin").write_bytes(b"x" * 1_000_000)
    for number in (1, 2):
        (folder / "notes.md").write_text(f"pass {number}")
        snapshots.snapshot_pass(Pass.objects.create(run=run, number=number), folder, since=None)
    assert PassResult.objects.filter(run_pass__run=run).count() == 4
    assert ResultBlob.objects.count() == 3  # data.bin once, notes.md twice (it changed)
    stored = sorted(p.stat().st_size for p in Path(snapshots_root).rglob("*") if p.is_file())
    assert stored == [6, 6, 1_000_000]  # and no staged copy left behind


def test_a_file_untouched_since_an_earlier_pass_is_linked_without_being_read_again(start, tmp_path, monkeypatch):
    run = start(LOOP)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "data.bin").write_bytes(b"x" * 1000)
    snapshots.snapshot_pass(Pass.objects.create(run=run, number=1), folder, since=None)
    (folder / "new.md").write_text("new")
    opened = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: opened.append(self.name) or real_open(self, *a, **k))
    second = snapshots.snapshot_pass(Pass.objects.create(run=run, number=2), folder, since=None)
    assert opened == ["new.md"] and {r.name for r in second} == {"data.bin", "new.md"}
    assert snapshots.open_result(PassResult.objects.get(run_pass__number=2, name="data.bin")).read() == b"x" * 1000


def test_a_pass_that_never_ended_is_kept_when_its_run_ends(start):
    broken = FakeModel(
        task=[
            {"text": "s", "tools": [tool("save_result", filename="results.md", content="half")]},
            RuntimeError("boom"),
        ]
    )
    run = drive(start(LOOP), broken)
    assert run.cause.startswith("error:")
    only = run.passes.get()
    assert only.ended_at is None and only.snapshot_at is not None
    assert "half" in page_file(run, "results.md")


def test_a_file_over_the_size_limit_is_listed_not_kept(start, settings):
    settings.RYSH_SNAPSHOT_FILE_MAX_BYTES = 10
    run = one_pass_run(start, "more than ten bytes")
    assert selectors.run_result_files(run)[0]["kept"] is False
    assert ResultBlob.objects.count() == 0
    assert viewer().get(f"/runs/{run.pk}/files/results.md").status_code == 404
    page = viewer().get(f"/runs/{run.pk}/").content.decode()
    assert "not kept: over the snapshot size limit" in page


def test_a_snapshot_is_immutable_once_taken(start):
    run = one_pass_run(start, "kept")
    run_pass = run.passes.get()
    (Path(run.output_dir) / "results.md").write_text("changed later")
    snapshots.snapshot_pass(run_pass, Path(run.output_dir), since=None)
    assert snapshots.judge_input(run_pass) == ("results.md", "kept")


# -- retention -----------------------------------------------------------------------------------


def test_prune_keeps_the_newest_runs_per_recipe_and_says_what_it_freed(start, capsys):
    runs = [one_pass_run(start, f"run {i} " + "y" * 100) for i in range(3)]
    shared = one_pass_run(start, "run 2 " + "y" * 100)  # same content as runs[2]: one content
    assert ResultBlob.objects.count() == 3
    call_command("prune_snapshots", "--keep", "2", "--dry-run")
    said = capsys.readouterr().out
    assert "would prune the snapshots of 2 run(s): 2 file(s); would free 212 bytes in 2 stored content(s)" in said
    assert PassResult.objects.count() == 4  # a dry run changes nothing
    call_command("prune_snapshots", "--keep", "2")
    out = capsys.readouterr().out
    # runs[0] and runs[1] go; runs[2] and `shared` stay, sharing one content
    assert "pruned the snapshots of 2 run(s): 2 file(s); freed 212 bytes in 2 stored content(s)" in out, out
    assert ResultBlob.objects.count() == 1
    assert all(snapshots.blob_path(b.sha256).exists() for b in ResultBlob.objects.all())
    old = Run.objects.get(pk=runs[0].pk)
    assert old.snapshots_pruned_at is not None and selectors.run_result_files(old) == []
    page = viewer().get(f"/runs/{old.pk}/").content.decode()
    assert "result snapshots were pruned" in page
    assert "run 2" in page_file(shared, "results.md")


def test_prune_with_the_default_setting_keeps_everything(start, capsys):
    one_pass_run(start, "a")
    one_pass_run(start, "b")
    call_command("prune_snapshots")
    assert "keeps every run's snapshots" in capsys.readouterr().out
    assert PassResult.objects.count() == 2 and ResultBlob.objects.count() == 2


# -- the store itself --------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    passes=st.lists(
        st.dictionaries(st.sampled_from(["a.md", "b.md", "c/d.txt"]), st.binary(max_size=40), min_size=1),
        min_size=1,
        max_size=4,
    )
)
def test_it_stores_each_distinct_content_once_and_gives_each_pass_back_its_files(tmp_path, start, passes):
    Pass.objects.all().delete()
    Run.objects.all().delete()
    PassResult.objects.all().delete()
    ResultBlob.objects.all().delete()
    run = start(LOOP)
    folder = tmp_path / f"folder-{run.pk}"
    for number, files in enumerate(passes, start=1):
        run_pass = Pass.objects.create(run=run, number=number)
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        snapshots.snapshot_pass(run_pass, folder, since=None)
    written: dict[str, bytes] = {}
    for number, files in enumerate(passes, start=1):
        written.update(files)  # a pass keeps everything in the folder by then
        kept = {
            r.name: snapshots.open_result(r).read()
            for r in PassResult.objects.filter(run_pass__number=number, run_pass__run=run)
        }
        assert kept == written
    distinct = {data for files in passes for data in files.values()}
    assert ResultBlob.objects.count() == len(distinct)
    run.delete()


def test_the_workers_prune_every_day_by_the_setting(start, settings):
    """The setting applies by itself: the daily retention schedule (ops/apps.py) applies it."""
    for i in range(3):
        one_pass_run(start, f"run {i}")
    settings.RYSH_SNAPSHOT_KEEP_RUNS = 1
    schedule = Schedule.objects.get(name=RETENTION_SCHEDULE)
    assert schedule.schedule_type == Schedule.DAILY
    import_string(schedule.func)()  # as django-q2 calls it
    assert Run.objects.filter(snapshots_pruned_at__isnull=False).count() == 2
    assert ResultBlob.objects.count() == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "a.md", "b.md", "gone.md"]),  # the pass's result_file
            st.lists(st.tuples(st.sampled_from(["a.md", "b.md", "c.md"]), st.integers(0, 3)), max_size=4),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_the_judged_result_is_the_result_file_else_the_newest(shapes):
    """judged_results (one query for a whole report) and judged_result (one pass) pick the result
    file when the snapshot kept it, else the newest file (ties by name)."""
    from tests.runs.test_consumers import make_run  # a bare run row; the module's own helpers drive whole runs

    run = make_run(state="finished")  # finished: any number of them may share a recipe
    when = timezone.now()
    passes = []
    for number, (result_file, files) in enumerate(shapes, start=1):
        run_pass = Pass.objects.create(run=run, number=number, result_file=result_file)
        for name, minutes in dict(files).items():  # a name once per pass
            PassResult.objects.create(
                run_pass=run_pass, name=name, size=1, modified_at=when + timedelta(minutes=minutes)
            )
        passes.append(run_pass)

    def expected(p: Pass) -> int | None:
        """The rule, said with the database's own ordering: the result file, else the newest."""
        rows = p.results.all()
        chosen = rows.filter(name=p.result_file).first() if p.result_file else None
        row = chosen or rows.order_by("-modified_at", "-name").first()
        return row and row.pk

    batch = snapshots.judged_results(passes)
    assert {pk: row and row.pk for pk, row in batch.items()} == {p.pk: expected(p) for p in passes}
    assert {p.pk: (snapshots.judged_result(p) or None) and snapshots.judged_result(p).pk for p in passes} == {
        p.pk: expected(p) for p in passes
    }
