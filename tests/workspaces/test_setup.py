"""A coding loop's `setup:` end to end (run_start → worker → setup → pass) on the scripted
provider, and once on the real SDK against the fake server, in the real sandbox, through the
real setup proxy: a project whose tests need a package from a local package index installs it
in setup and runs green, while the agent's commands after it reach nothing; a failure, a hang,
a refused host and a cancel each end the run before any model call; the dependency cache
outlives the run and is read-only to the agent."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from runs import services, worker
from runs.models import Control, LedgerEntry, Run, RunEvent, Step
from runs.wiring import arm_run
from tests.conftest import drive
from tests.fake_model import FakeModel, tool
from tests.fakes.anthropic_server import fake_anthropic, judge_or  # noqa: F401 (fixture)
from tests.recipes_git import git
from tests.runs.test_view_runs import client_for, user_with
from workspaces.caches import cache_for
from workspaces.models import SetupState, Workspace

pytestmark = pytest.mark.django_db(transaction=True)

TEST_APP = (
    "import unittest\n\nimport tinydep\n\n\n"
    "class T(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(tinydep.double(21), 42)\n"
)


# -- a PEP 503 "simple" index on loopback, serving a wheel built here ------------------------------


def wheel(name: str, version: str, module: str) -> tuple[str, bytes]:
    """A pure-Python wheel of one module, written by hand (its RECORD hashed as pip checks)."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": module.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: rysh-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return f"{name}-{version}-py3-none-any.whl", buffer.getvalue()


class PackageIndex:
    def __init__(self, root: Path):
        self.root, self.requests = root, []
        index = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def log_message(self, *args):
                index.requests.append(self.path)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/simple/"

    def add(self, name: str, filename: str, data: bytes) -> None:
        (self.root / "packages").mkdir(parents=True, exist_ok=True)
        (self.root / "packages" / filename).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        (self.root / "simple" / name).mkdir(parents=True, exist_ok=True)
        link = f'<a href="../../packages/{filename}#sha256={digest}">{filename}</a>'
        (self.root / "simple" / name / "index.html").write_text(f"<!DOCTYPE html><html><body>{link}</body></html>")


@pytest.fixture
def package_index(tmp_path, settings):
    """A local index with `tinydep` (double(x) = 2x), allowed to setup as a private mirror."""
    index = PackageIndex(tmp_path / "index")
    index.add("tinydep", *wheel("tinydep", "1.0", "def double(x):\n    return 2 * x\n"))
    threading.Thread(target=index.server.serve_forever, daemon=True).start()
    settings.RYSH_SETUP_ALLOW_HOSTS = []
    settings.RYSH_SETUP_ALLOW_PRIVATE_HOSTS = [f"127.0.0.1:{index.port}"]
    yield index
    index.server.shutdown()
    index.server.server_close()


@pytest.fixture(autouse=True)
def caches_root(settings, tmp_path):
    settings.RYSH_CACHES_DIR = tmp_path / "caches"
    settings.RYSH_SETUP_TIMEOUT = 120
    return settings.RYSH_CACHES_DIR


# -- a repository with an app whose tests need tinydep -----------------------------------------------


@pytest.fixture
def app_repo(tmp_path, results_root):
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app/test_app.py").write_text(TEST_APP)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "an app")
    return repo


def recipe(repo: Path, setup: list[str], turns: list[dict], *, name: str = "deps") -> Path:
    """A coding recipe working in app/ with this setup, and its scripted model's turns."""
    folder = repo / ".rysh/automations/tasks"
    folder.mkdir(parents=True, exist_ok=True)
    front = {
        "workdir": "app",
        "setup": setup,
        "loop": {
            "do": {"max_iterations": 20, "budget": {"size": "1b"}},
            "while": {"max_iterations": 1, "prompts": {"until": "the tests pass"}},
        },
    }
    path = folder / f"{name}.md"
    path.write_text(f"---\n{yaml.safe_dump(front, sort_keys=False)}---\nMake the tests pass.\n")
    script = {"passes": [{"task": [*turns, {"text": "Done."}], "judge": "YES\nthe tests pass"}]}
    (folder / f"{name}.script.yaml").write_text(yaml.safe_dump(script, sort_keys=False))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"recipe {name}")
    return path


def bash(command: str) -> dict:
    return {"text": f"$ {command}", "tool_calls": [{"name": "bash", "input": {"command": command}}]}


def start_and_work(path: Path) -> Run:
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    return run


def outputs(run: Run) -> list[str]:
    return [r["content"] for s in Step.objects.filter(run_pass__run=run).order_by("number") for r in s.tool_results]


def setup_events(run: Run) -> list[str]:
    return list(RunEvent.objects.filter(run=run, kind="setup").order_by("pk").values_list("message", flat=True))


# -- the story --------------------------------------------------------------------------------------


def test_setup_installs_from_the_allowed_index_and_the_agent_runs_the_tests_green_offline(app_repo, package_index):
    reach = f"python3 -c \"import urllib.request; urllib.request.urlopen('{package_index.url}', timeout=3)\""
    path = recipe(
        app_repo,
        [
            "python3 -m venv .venv",
            f".venv/bin/pip install --disable-pip-version-check --index-url {package_index.url} tinydep",
        ],
        [
            bash(".venv/bin/python -m unittest -v 2>&1"),
            bash(reach),  # the same index, now without setup's proxy
            bash(f'curl -sS --max-time 3 {package_index.url}; echo "[$HTTP_PROXY$HTTPS_PROXY$http_proxy$https_proxy]"'),
        ],
    )
    run = start_and_work(path)
    assert (run.state, run.cause) == ("finished", "fulfilled"), run.cause
    workspace = Workspace.objects.get(run=run)
    assert workspace.setup_state == SetupState.DONE
    assert [(c["command"].split()[0], c["exit_status"], c["killed"]) for c in workspace.setup] == [
        ("python3", 0, None),
        (".venv/bin/pip", 0, None),
    ]
    assert "Successfully installed tinydep-1.0" in workspace.setup[1]["output"]
    assert any(p.endswith(".whl") for p in package_index.requests)  # fetched through the proxy
    seen = len(package_index.requests)
    said = outputs(run)
    assert said[0].startswith("exit status: 0") and "test_double" in said[0] and "OK" in said[0]
    assert "exit status: 1" in said[1] and "URLError" in said[1]
    assert "exit status: 0" in said[2] and "curl: (7)" in said[2] and "\n[]\n" in said[2]  # no proxy variable
    assert len(package_index.requests) == seen  # nothing after setup reached the index
    # the virtualenv setup made is not the run's work
    assert workspace.stat == []
    events = setup_events(run)
    assert events[0].startswith("setup: 2 command(s) in app, fetching only from 127.0.0.1:")
    assert events[1].startswith("setup: `python3 -m venv .venv` exited 0 in ")


def test_on_the_real_sdk_setup_then_the_project_s_own_tests_as_the_gate(app_repo, package_index, fake_anthropic):
    """The whole story against the fake Anthropic server with the real SDK: setup installs the
    dependency through the proxy, the agent runs the tests offline, and the pass counts as done
    only because `until_command` exits 0 in the copy and the judge says YES."""
    folder = app_repo / ".rysh/automations/tasks"
    folder.mkdir(parents=True, exist_ok=True)
    install = f".venv/bin/pip install --disable-pip-version-check --index-url {package_index.url} tinydep"
    front = {
        "workdir": "app",
        "setup": ["python3 -m venv .venv", install],
        "until_command": ".venv/bin/python -m unittest -q",
        "loop": {
            "do": {"max_iterations": 20, "budget": {"size": "1b"}},
            "while": {"max_iterations": 2, "prompts": {"until": "the tests pass"}},
        },
    }
    path = folder / "gated-deps.md"
    path.write_text(f"---\n{yaml.safe_dump(front, sort_keys=False)}---\nMake the tests pass.\n")
    git(app_repo, "add", "-A")
    git(app_repo, "commit", "-q", "-m", "a gated recipe with setup")
    queue = judge_or(fake_anthropic, "YES\nThe tests pass.")
    queue += [bash(".venv/bin/python -m unittest -v 2>&1"), {"text": "The tests pass."}]
    run = services.run_start(kind="task", name_or_path=str(path), args=[])
    assert run.provider == "anthropic"
    worker.execute(run.pk, arm_run)
    run.refresh_from_db()
    assert (run.state, run.cause) == ("finished", "fulfilled"), run.cause
    assert Workspace.objects.get(run=run).setup_state == SetupState.DONE
    only = run.passes.get()
    assert (only.gate_status, only.verdict) == (0, "YES") and "OK" in only.gate_output
    assert outputs(run)[0].startswith("exit status: 0") and "test_double" in outputs(run)[0]
    # setup ran before the first model call: the first request already saw the copy set up
    assert fake_anthropic.requests and any(p.endswith(".whl") for p in package_index.requests)


def test_a_failing_setup_ends_the_run_before_any_model_call(app_repo):
    path = recipe(app_repo, ["echo preparing", "echo 'no such package' >&2; exit 3", "echo never"], [bash("true")])
    run = start_and_work(path)
    assert (run.state, run.cause) == (
        "finished",
        "setup failed: `echo 'no such package' >&2; exit 3` exited 3: no such package",
    )
    assert not Step.objects.filter(run_pass__run=run).exists()
    assert not LedgerEntry.objects.filter(run=run).exists() and run.tokens_counted == 0
    workspace = Workspace.objects.get(run=run)
    assert workspace.setup_state == SetupState.FAILED
    assert [c["exit_status"] for c in workspace.setup] == [0, 3]  # the third never ran
    # on the run page, in the working copy's section
    page = client_for(user_with("viewer")).get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-setup"' in page and "exit status 3" in page and "no such package" in page
    assert "setup failed: `echo &#x27;no such package&#x27; &gt;&amp;2; exit 3` exited 3" in page


def test_a_setup_that_hangs_is_killed_at_its_timeout(app_repo, settings):
    settings.RYSH_SETUP_TIMEOUT = 2
    path = recipe(app_repo, ["sleep 60 && echo woke"], [bash("true")])
    started = time.monotonic()
    run = start_and_work(path)
    assert time.monotonic() - started < 20
    assert (
        run.cause
        == "setup failed: `sleep 60 && echo woke` killed: timed out: setup took longer than RYSH_SETUP_TIMEOUT (2s)"
    )
    assert not Step.objects.filter(run_pass__run=run).exists()


def test_a_host_not_allowed_is_refused_by_the_proxy_and_the_event_names_it(app_repo, package_index):
    path = recipe(app_repo, ["curl -sS --max-time 10 https://pypi.org/simple/tinydep/"], [bash("true")])
    run = start_and_work(path)
    assert run.cause.startswith("setup failed: `curl -sS --max-time 10 https://pypi.org/simple/tinydep/` exited 56: ")
    assert "403" in run.cause and run.cause.endswith(
        "(the proxy refused: pypi.org:443 is not in RYSH_SETUP_ALLOW_HOSTS)"
    )
    assert "setup: the proxy refused: pypi.org:443 is not in RYSH_SETUP_ALLOW_HOSTS" in setup_events(run)
    assert not Step.objects.filter(run_pass__run=run).exists()


def test_a_cancel_kills_the_setup_command(app_repo):
    path = recipe(app_repo, ["sleep 60"], [bash("true")])
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")

    def cancel_once_it_runs():
        for _ in range(200):
            if Workspace.objects.filter(run=run, setup_state=SetupState.RUNNING).exists():
                Run.objects.filter(pk=run.pk).update(control=Control.CANCEL)
                return
            time.sleep(0.05)

    canceller = threading.Thread(target=cancel_once_it_runs)
    canceller.start()
    started = time.monotonic()
    worker.execute(run.pk, arm_run)
    canceller.join()
    run.refresh_from_db()
    assert time.monotonic() - started < 20
    assert run.cause == "setup stopped: `sleep 60` killed: the run was cancelled"
    assert not Step.objects.filter(run_pass__run=run).exists()


def test_the_cache_outlives_the_run_read_write_for_setup_read_only_for_the_agent(app_repo):
    setup = [
        'echo "seen $(cat "$PIP_CACHE_DIR/runs" 2>/dev/null || echo 0)"; echo 1 >> "$PIP_CACHE_DIR/runs.log"',
        'wc -l < "$PIP_CACHE_DIR/runs.log" > "$PIP_CACHE_DIR/runs"',
    ]
    turns = [bash('cat "$PIP_CACHE_DIR/runs"; touch "$PIP_CACHE_DIR/mine" 2>&1; echo "$GOMODCACHE $GOPROXY"')]
    first = start_and_work(recipe(app_repo, setup, turns))
    assert first.cause == "fulfilled", first.cause
    cache = cache_for(Workspace.objects.get(run=first).source)
    assert (cache.root / "pip/runs").read_text().strip() == "1"
    second = start_and_work(recipe(app_repo, setup, turns, name="again"))  # another recipe, the same repository
    assert second.cause == "fulfilled"
    assert "seen 1" in Workspace.objects.get(run=second).setup[0]["output"]  # the first run's cache
    said = outputs(second)[0]
    assert said.startswith("exit status: 0") and "\n2\n" in said  # the agent reads what setup wrote ...
    assert "Read-only file system" in said and not (cache.root / "pip/mine").exists()  # ... and cannot write
    assert f"{cache.root}/go/mod off" in said
    assert cache.repository() == str(app_repo)


def test_a_resume_carries_the_set_up_copy_over_without_running_setup_again(app_repo):
    counted = 'echo x >> "$PIP_CACHE_DIR/setups"'
    first = start_and_work(recipe(app_repo, [counted], [bash("true")]))
    assert first.cause == "fulfilled"
    second = services.run_resume(run=first)
    second = drive(
        second, FakeModel(task=[{"text": "look", "tools": [tool("bash", command="ls -a")]}, {"text": "Done."}])
    )
    assert second.cause == "fulfilled"
    cache = cache_for(Workspace.objects.get(run=first).source)
    assert (cache.root / "pip/setups").read_text() == "x\n"  # once
    carried = Workspace.objects.get(run=second)
    assert carried.setup_state == SetupState.DONE and carried.setup[0]["command"] == counted
    assert setup_events(second) == [f"setup: ran when run #{first.pk} made this copy; not run again"]


def test_a_recipe_without_setup_runs_as_before(app_repo, caches_root):
    run = start_and_work(_no_setup(app_repo))
    assert run.cause == "fulfilled"
    assert Workspace.objects.get(run=run).setup_state == SetupState.NONE
    assert "none" in outputs(run)[0] and not caches_root.exists()


def _no_setup(repo: Path) -> Path:
    folder = repo / ".rysh/automations/tasks"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plain.md").write_text(
        textwrap.dedent(
            """\
            ---
            workdir: app
            loop:
              do:
                budget:
                  size: 1b
              while:
                max_iterations: 1
                prompts:
                  until: it looked around
            ---
            Look around.
            """
        )
    )
    script = {"passes": [{"task": [bash("echo ${PIP_CACHE_DIR:-none}"), {"text": "Done."}], "judge": "YES\nok"}]}
    (folder / "plain.script.yaml").write_text(yaml.safe_dump(script))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "plain")
    return folder / "plain.md"


def test_with_the_sandbox_off_setup_runs_unconfined_and_says_so(app_repo, settings):
    settings.RYSH_SANDBOX = "off"
    run = start_and_work(recipe(app_repo, ['echo "cache at $PIP_CACHE_DIR, proxy [$HTTPS_PROXY]"'], [bash("true")]))
    assert run.cause == "fulfilled"
    cache = cache_for(Workspace.objects.get(run=run).source)
    assert Workspace.objects.get(run=run).setup[0]["output"] == f"cache at {cache.root}/pip, proxy []\n"
    assert (
        setup_events(run)[0] == "setup: 1 command(s) in app, unsandboxed, with the worker's network (RYSH_SANDBOX=off)"
    )


def test_a_dry_run_says_what_setup_runs_and_where_it_may_fetch_from(app_repo, settings):
    path = recipe(app_repo, ["python3 -m venv .venv", ".venv/bin/pip install -e ."], [bash("true")])
    settings.RYSH_SETUP_ALLOW_HOSTS, settings.RYSH_SETUP_ALLOW_PRIVATE_HOSTS = [], []
    lines = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted", dry_run=True).lines
    assert (
        "setup: 2 command(s) when the copy is made (`python3 -m venv .venv`; `.venv/bin/pip install -e .`), "
        "no network (RYSH_SETUP_ALLOW_HOSTS is empty)"
    ) in lines
    settings.RYSH_SETUP_ALLOW_HOSTS = ["pypi.org", "files.pythonhosted.org"]
    lines = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted", dry_run=True).lines
    assert any(line.endswith("fetching only from pypi.org, files.pythonhosted.org") for line in lines)
    assert not Run.objects.exists()


def test_a_continue_finds_the_copy_set_up_and_does_not_run_setup_again(app_repo):
    path = recipe(app_repo, ['echo x >> "$PIP_CACHE_DIR/setups"'], [bash("true")])
    run = services.run_start(kind="task", name_or_path=str(path), args=[], provider="scripted")

    def cancel(request):
        Run.objects.filter(pk=run.pk).update(control=Control.CANCEL)

    run = drive(run, FakeModel(task=[{"text": "hm"}], on_call=cancel, delay=1))
    assert (run.state, run.pause_reason) == ("paused", "cancelled")
    services.run_continue(run=run)
    run = drive(run, FakeModel(task=[{"text": "look", "tools": [tool("bash", command="ls -a")]}, {"text": "Done."}]))
    assert run.cause == "fulfilled"
    cache = cache_for(Workspace.objects.get(run=run).source)
    assert (cache.root / "pip/setups").read_text() == "x\n"  # once
    assert len([e for e in setup_events(run) if e.startswith("setup: `")]) == 1
