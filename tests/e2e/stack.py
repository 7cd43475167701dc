"""A whole rysh on loopback for browser tests, screenshots and the live benchmark.

A temp RYSH_DATA_DIR with an on-disk database, `migrate` + `seed_demo`, then daphne on a free
port and a django-q2 `qcluster`, each in its own process group (killed as a group on stop),
exactly as `make run` starts them. Nothing here imports Django: the processes do, and
`query()` reads the database through a `python -c` helper with django.setup().
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
GIT_AUTHOR = ["-c", "user.name=rysh e2e", "-c", "user.email=e2e@rysh.invalid"]


def launch_chromium(playwright, **kwargs):
    """Debian's Chromium where it is installed, else Playwright's own build."""
    options = {"args": CHROMIUM_ARGS, **kwargs}
    if Path(CHROMIUM).exists():
        options["executable_path"] = CHROMIUM
    return playwright.chromium.launch(**options)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


class Stack:
    def __init__(
        self, data_dir: Path | None = None, *, redis_url: str = "", workers: int = 2, extra_env: dict | None = None
    ):
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="rysh-e2e-"))
        self.env = {
            **os.environ,
            "RYSH_DATA_DIR": str(self.data_dir / "data"),
            "DJANGO_SETTINGS_MODULE": "rysh_site.settings",
            "PYTHONUNBUFFERED": "1",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "RYSH_WORKERS": str(workers),
        }
        for name in (
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "DATABASE_URL",
            "REDIS_URL",
            "RYSH_PROVIDER",
            "RYSH_RECIPES_REPO",
            "RYSH_RESULTS_DIR",
            "SECRET_KEY",
            "DEBUG",
            "CSRF_TRUSTED_ORIGINS",
        ):
            self.env.pop(name, None)
        if redis_url:
            self.env["REDIS_URL"] = redis_url
        self.env.update(extra_env or {})
        self.port = 0
        self.procs: dict[str, subprocess.Popen] = {}

    # -- paths ---------------------------------------------------------------------------------
    @property
    def data(self) -> Path:
        return Path(self.env["RYSH_DATA_DIR"])

    @property
    def repo(self) -> Path:
        return self.data / "demo-recipes"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- processes -----------------------------------------------------------------------------
    def manage(self, *args, timeout: float = 180, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result

    def query(self, code: str, timeout: float = 60):
        """Run `code` with Django set up; it prints JSON on its last line, which is returned."""
        script = "import django, json\ndjango.setup()\n" + textwrap.dedent(code)
        out = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        return json.loads(out.stdout.strip().splitlines()[-1])

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.data_dir / f"{name}.log", "a")
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self.procs[name] = proc
        return proc

    def setup(self) -> Stack:
        self.data.mkdir(parents=True, exist_ok=True)
        self.manage("migrate", "--noinput")
        self.manage("seed_demo")
        return self

    def start_web(self) -> None:
        self.port = free_port()
        self.env["RYSH_PORT"] = str(self.port)  # the websocket origin check wants the real port
        proc = self._spawn(
            "daphne",
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "rysh_site.asgi:application"],
        )
        wait_for_port(self.port, proc)

    def start_worker(self) -> None:
        self._spawn("qcluster", [sys.executable, "manage.py", "qcluster"])

    def start(self) -> Stack:
        self.setup()
        self.start_web()
        self.start_worker()
        return self

    def stop_process(self, name: str) -> None:
        """SIGTERM to the leader (a qcluster stops its workers itself; a SIGTERM to every process of
        the group at once makes it hang), then SIGKILL to whatever is left of its process group."""
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)

    def stop(self, *, keep: bool = False) -> None:
        for name in list(self.procs):
            self.stop_process(name)
        if self._own_dir and not keep:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def log(self, name: str) -> str:
        path = self.data_dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -- the demo --------------------------------------------------------------------------------
    def logins(self) -> dict[str, str]:
        """{username: password} from $RYSH_DATA_DIR/demo-login (`demo / PASSWORD   (admin)`)."""
        found = {}
        for line in (self.data / "demo-login").read_text().splitlines():
            m = re.match(r"\s*(\S+) / (\S+)", line)
            if m:
                found[m.group(1)] = m.group(2)
        return found

    def add_recipes(self, files: dict[str, str], message: str = "e2e recipes") -> None:
        """Commit files (paths relative to the recipes repository) and sync the catalogue."""
        for relative, text in files.items():
            path = self.repo / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        subprocess.run(["git", "-C", str(self.repo), "add", *files], check=True)
        subprocess.run(["git", "-C", str(self.repo), *GIT_AUTHOR, "commit", "-q", "-m", message], check=True)
        self.manage("sync_recipes")

    def run(self, recipe: str, *args: str) -> int:
        """Start a run from the CLI; returns its id."""
        out = self.manage("auto", "task", "run", recipe, *args).stdout
        m = re.search(r"run #(\d+) queued", out)
        if not m:
            raise RuntimeError(out)
        return int(m.group(1))

    def run_row(self, pk: int) -> dict:
        return self.query(f"""
            from runs.models import Run
            r = Run.objects.get(pk={pk})
            print(json.dumps({{"state": r.state, "pause_reason": r.pause_reason, "phase": r.phase,
                              "cause": r.cause, "pass_number": r.pass_number, "last_verdict": r.last_verdict,
                              "control": r.control, "resumed_from": r.resumed_from_id,
                              "passes": list(r.passes.order_by("number").values_list("verdict", flat=True)),
                              "takeover": list(r.passes.order_by("number").values_list("takeover_used", flat=True))}}))""")

    def wait_run(self, pk: int, predicate, timeout: float = 60, every: float = 0.3) -> dict:
        deadline = time.monotonic() + timeout
        row = self.run_row(pk)
        while not predicate(row):
            if time.monotonic() > deadline:
                raise AssertionError(f"run #{pk} never got there: {row}")
            time.sleep(every)
            row = self.run_row(pk)
        return row


def login(page, base_url: str, username: str, password: str, next_path: str = "/") -> None:
    page.goto(f"{base_url}/login/?next={next_path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("form button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
