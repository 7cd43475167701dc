import os
import re
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalogue.models import Recipe, RecipeVersion, RepoState
from catalogue.sync import recipe_for_run, recipes_sync
from tests.recipes_git import (  # noqa: F401
    BROKEN,
    git,
    recipe_text,
    remote,
    work,
)

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def versions(kind, name):
    return list(RecipeVersion.objects.filter(recipe__kind=kind, recipe__name=name).order_by("id"))


def test_it_reads_every_recipe_at_the_head_with_its_commit(work):
    result = recipes_sync()
    assert (result.recipes, result.changed, result.invalid) == (2, 2, 0)
    report = Recipe.objects.get(kind="task", name="report")
    assert report.latest == report.good
    version = report.latest
    assert version.commit_sha == work.head()
    assert version.author == "Ada Outside <ada@example.com>"
    assert version.message == "Initial recipes"
    assert version.path == ".rysh/automations/tasks/report.md"
    assert version.text == recipe_text()
    assert version.valid and version.errors == []
    assert version.spec["description"] == "A task"
    assert version.plan["worst_display"] == "1s" and version.plan["worst_money"] == "$40.00"
    assert Recipe.objects.get(kind="web", name="scout").latest.spec["kind"] == "web"


def test_it_ignores_files_that_are_not_recipes(work):
    (work.path / "README.md").write_text("hi")
    work.write("tasks/sub/deep.md", recipe_text())
    work.write("notes/x.md", recipe_text())
    work.commit("Other files")
    assert recipes_sync().recipes == 2


def test_it_keeps_the_last_good_version_when_a_new_one_is_broken(work):
    recipes_sync()
    good = Recipe.objects.get(name="report").good
    work.commit("Break it", tasks__report=BROKEN)
    result = recipes_sync()
    assert (result.changed, result.invalid) == (1, 1)
    report = Recipe.objects.get(name="report")
    assert report.good == good and report.latest != good
    assert report.latest.errors == ["report.md:4 loop.do.interval: expected a whole number from 1 to 500, got 900"]
    assert recipe_for_run(kind="task", name="report") == (report, good)
    work.commit("Fix it", tasks__report=recipe_text("fixed"))
    recipes_sync()
    report.refresh_from_db()
    assert report.good == report.latest and report.good.spec["description"] == "fixed"


def test_it_never_runs_a_recipe_that_was_never_valid(work):
    work.commit("Broken from birth", tasks__bad=BROKEN)
    recipes_sync()
    assert recipe_for_run(kind="task", name="bad") is None
    assert recipe_for_run(kind="task", name="nothing") is None
    assert recipe_for_run(kind="task", name="report")[1].valid


def test_it_archives_a_deleted_recipe_and_keeps_its_history(work):
    recipes_sync()
    work.commit("Edit", webs__scout=recipe_text("two"))
    recipes_sync()
    work.commit("Remove scout", webs__scout=None)
    result = recipes_sync()
    assert (result.recipes, result.changed) == (1, 1)
    scout = Recipe.objects.get(name="scout")
    assert scout.archived and len(versions("web", "scout")) == 2
    assert recipe_for_run(kind="web", name="scout") is None
    work.commit("Bring it back", webs__scout=recipe_text("three"))
    recipes_sync()
    scout.refresh_from_db()
    assert not scout.archived and scout.latest.spec["description"] == "three"


def test_it_reads_only_the_files_that_changed(work):
    recipes_sync()
    for n in range(20):
        work.write(f"tasks/t{n}.md", recipe_text(f"t{n}"))
    work.commit("Twenty more")
    assert recipes_sync().files_read == 20
    work.commit("One edit", tasks__t7=recipe_text("seven"))
    result = recipes_sync()
    assert (result.files_read, result.changed, result.versions) == (1, 1, 1)
    assert recipes_sync().files_read == 0  # nothing new: nothing read


def test_it_keeps_a_version_for_every_commit_in_between(work):
    recipes_sync()
    work.commit("First edit", tasks__report=recipe_text("one"))
    work.commit("Second edit", tasks__report=recipe_text("two"))
    work.commit("Unrelated", webs__scout=recipe_text("s2"))
    recipes_sync()
    assert [v.message for v in versions("task", "report")] == ["Initial recipes", "First edit", "Second edit"]
    assert Recipe.objects.get(name="report").latest.message == "Second edit"


def test_it_shows_merges_pushed_from_outside(work):
    recipes_sync()
    git(work.path, "checkout", "-q", "-b", "feature")
    work.commit("Feature work", tasks__report=recipe_text("feature"))
    git(work.path, "checkout", "-q", "main")
    work.commit("Main work", webs__scout=recipe_text("main"))
    git(work.path, "merge", "-q", "--no-ff", "feature", "-m", "Merge pull request #7 from feature")
    recipes_sync()
    report = Recipe.objects.get(name="report")
    assert report.latest.message == "Merge pull request #7 from feature"
    assert report.latest.spec["description"] == "feature"


def test_it_rereads_everything_after_a_history_rewrite(work):
    recipes_sync()
    work.commit("Doomed", tasks__doomed=recipe_text())
    recipes_sync()
    assert Recipe.objects.filter(name="doomed", archived=False).exists()
    git(work.path, "reset", "-q", "--hard", "HEAD~1")
    work.commit("Rewritten", tasks__report=recipe_text("rewritten"))
    result = recipes_sync()
    assert Recipe.objects.get(name="doomed").archived
    assert Recipe.objects.get(name="report").latest.spec["description"] == "rewritten"
    assert result.recipes == 2
    assert RepoState.objects.get().synced_sha == work.head()


def test_it_is_idempotent(work):
    recipes_sync()
    again = recipes_sync()
    assert (again.changed, again.versions) == (0, 0)
    RepoState.objects.update(synced_sha="")  # forget where we were: a full re-read
    again = recipes_sync()
    assert (again.changed, again.versions) == (0, 0)
    assert RecipeVersion.objects.count() == 2 and Recipe.objects.count() == 2


def test_it_reports_a_file_that_is_not_utf8(work):
    (work.path / ".rysh/automations/tasks/latin.md").write_bytes(b"caf\xe9\n")
    work.commit("Latin-1")
    assert recipes_sync().invalid == 1
    assert Recipe.objects.get(name="latin").latest.errors == [
        "latin.md file: is not UTF-8 text (invalid continuation byte at byte 3)"
    ]


def test_it_fetches_a_remote_first(remote):
    assert recipes_sync().recipes == 2
    remote.commit("Pushed elsewhere", tasks__new=recipe_text("from outside"))
    remote.push()
    result = recipes_sync()
    assert (result.recipes, result.changed) == (3, 1)
    assert Recipe.objects.get(name="new").latest.message == "Pushed elsewhere"


def _manage(*args, env):
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.scaleout)])
def database_env(request, tmp_path):
    """The environment of a separate process on a real database: SQLite in WAL mode in a data
    folder of its own, or a fresh PostgreSQL database (skipped when none answers)."""
    env = {**os.environ, "RYSH_DATA_DIR": str(tmp_path / "data")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    if request.param == "sqlite":
        yield env, lambda sql: sqlite3.connect(tmp_path / "data" / "db.sqlite3").execute(sql).fetchone()
        return
    url = request.getfixturevalue("postgres_url")
    import psycopg

    name = f"rysh_sync_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    database = url.rsplit("/", 1)[0] + f"/{name}"

    def query(sql):
        with psycopg.connect(database) as conn:
            return conn.execute(sql).fetchone()

    yield {**env, "DATABASE_URL": database}, query
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_it_never_duplicates_anything_when_syncs_run_at_once(work, database_env):
    env, query = database_env
    for n in range(300):
        work.write(f"tasks/t{n}.md", recipe_text(f"t{n}"))
    work.commit("Three hundred")
    env["RYSH_RECIPES_REPO"] = str(work.path)
    migrate = _manage("migrate", "--noinput", env=env)
    assert migrate.wait(timeout=300) == 0, migrate.stderr.read()
    syncs = [_manage("sync_recipes", env=env) for _ in range(3)]
    outputs = [(p.wait(timeout=300), *p.communicate()) for p in syncs]
    assert [code for code, _, _ in outputs] == [0, 0, 0], outputs
    assert sorted(out.split(",")[0] for _, out, _ in outputs) == ["synced: 302 recipes"] * 3
    assert query("SELECT count(*) FROM automations_recipe") == (302,)
    assert query("SELECT count(*) FROM automations_recipeversion") == (302,)
    assert query("SELECT count(*) FROM automations_repostate") == (1,)


def test_the_command_prints_one_line_and_exits_0(work, capsys):
    call_command("sync_recipes")
    line = capsys.readouterr().out.strip()
    assert re.fullmatch(r"synced: 2 recipes, 2 changed, 0 invalid, \d+\.\d\ds", line)


def test_the_command_fails_when_the_repository_cannot_be_read(settings, tmp_path):
    settings.RYSH_RECIPES_REPO = str(tmp_path / "missing")
    with pytest.raises(CommandError, match="no such directory"):
        call_command("sync_recipes")
    (tmp_path / "empty").mkdir()
    git(tmp_path / "empty", "init", "-q", "-b", "main")
    settings.RYSH_RECIPES_REPO = str(tmp_path / "empty")
    with pytest.raises(CommandError, match="no branch 'main'"):
        call_command("sync_recipes")


def test_it_loses_the_claim_to_a_sync_that_finished_first(work, monkeypatch):
    import catalogue.sync as sync

    real_walk, calls = sync._walk, []

    def walk_while_another_sync_runs(*args):
        calls.append(args)
        if len(calls) == 1:  # the first sync is between reading git and writing rows
            monkeypatch.setattr(sync, "_walk", real_walk)
            assert recipes_sync().changed == 2  # ...when a second one runs to the end
        return real_walk(*args)

    monkeypatch.setattr(sync, "_walk", walk_while_another_sync_runs)
    assert recipes_sync().changed == 0  # the first lost the claim and found nothing left
    assert RecipeVersion.objects.count() == 2 and Recipe.objects.count() == 2


def test_seed_demo_creates_syncs_and_schedules_once(settings, tmp_path, capsys):
    from django_q.models import Schedule

    from catalogue.tasks import sync_task

    settings.RYSH_RECIPES_REPO = str(tmp_path / "demo-recipes")
    settings.DATA_DIR = tmp_path
    call_command("seed_demo")
    call_command("seed_demo")
    out = capsys.readouterr().out
    assert "recipes: created the demo repository" in out
    assert "synced: 5 recipes, 5 changed, 0 invalid, 1 package changed" in out  # the demo's test-fixer agent
    assert "synced: 5 recipes, 0 changed, 0 invalid, 0." in out
    schedule = Schedule.objects.get(func="catalogue.tasks.sync_task")
    assert (schedule.schedule_type, schedule.minutes) == (Schedule.MINUTES, 1)
    assert sync_task().startswith("synced: 5 recipes, 0 changed")
    names = {r.name for r in Recipe.objects.all()}
    assert names == {"fix-the-test", "halilagin-medium", "reading-list", "scout", "tiny-press"}


def test_seed_demo_adds_the_demo_files_an_older_seed_did_not_have(settings, tmp_path, capsys):
    settings.DEMO_RECIPES_REPO = settings.RYSH_RECIPES_REPO = str(tmp_path / "demo-recipes")
    settings.DATA_DIR = tmp_path
    call_command("seed_demo")
    repo = tmp_path / "demo-recipes"
    (repo / "tiny-calc/calc.py").write_text("# someone's own edit\n")
    subprocess.run(
        ["git", "-C", str(repo), "rm", "-q", "-r", "tiny-calc/README.md", ".rysh/automations/tasks"], check=True
    )
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "old"], check=True
    )
    call_command("seed_demo")
    assert "added 13 new demo file(s)" in capsys.readouterr().out  # with fix-the-test's eval cases
    assert (repo / "tiny-calc/calc.py").read_text() == "# someone's own edit\n"  # what exists is left alone
    assert (repo / ".rysh/automations/tasks/fix-the-test.md").is_file()
    log = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%s"], capture_output=True, text=True).stdout
    assert log.startswith("Demo recipes: add ")


def test_the_benchmark_runs_and_holds_its_rules():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.sync", "40"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "incremental sync" in done.stdout and "1 files read" in done.stdout
    assert "ok: the list's query count is flat" in done.stdout
