"""agents.sandbox: every shell command of a coding agent runs in a bubblewrap sandbox (docs/coding-loops.md).

Real bwrap, real processes, real sockets: each test proves a wall by trying to get through it,
and, where a wall could be missing without the test noticing, by showing that the same attempt
gets through without the sandbox."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import uuid
from pathlib import Path

import pytest

from agents import cgroups, sandbox
from agents.sandbox import CommandResult, Sandbox, SandboxConfig, SandboxUnavailable, sandbox_problem

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture
def copy(tmp_path):
    folder = tmp_path / "copy"
    (folder / "sub").mkdir(parents=True)
    return folder


def make(copy: Path, **options) -> Sandbox:
    return Sandbox(copy, config=SandboxConfig(**options))


def run(box: Sandbox, command: str, *, timeout: float = 20, **options) -> CommandResult:
    return box.run(command, cwd=box.root, timeout=timeout, **options)


def processes_with(marker: str) -> list[int]:
    """Host processes whose command line holds marker (what `pgrep -f marker` finds)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass  # gone meanwhile
    return found


def marker() -> str:
    return f"marker-{uuid.uuid4().hex}"


def within(seconds: float, call):
    """call()'s value, failing (not hanging) when it takes longer than seconds."""
    outcome = []

    def target():
        try:
            outcome.append(("value", call()))
        except BaseException as error:  # handed to the test's thread
            outcome.append(("error", error))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still running after {seconds}s"
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


def started_as(tag: str) -> bool:
    """Whether a process runs whose argv[0] is tag (`exec -a tag ...`)."""
    for pid in processes_with(tag):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] == tag.encode():
                return True
        except OSError:
            pass  # gone meanwhile
    return False


def test_it_returns_exit_status_stdout_and_stderr(copy):
    result = run(make(copy), "echo out; echo err >&2; exit 3")

    assert (result.exit_status, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert (result.stdout_bytes, result.stderr_bytes, result.killed, result.sandboxed) == (4, 4, None, True)
    assert result.text() == "exit status: 3\n<stdout>\nout\n</stdout>\n<stderr>\nerr\n</stderr>"


def test_it_runs_in_the_given_sub_folder_with_bash(copy):
    box = make(copy)

    result = box.run('pwd; echo "$BASH_VERSION"', cwd=copy / "sub", timeout=20)
    relative = box.run("pwd", cwd="sub", timeout=20)

    lines = result.stdout.splitlines()
    assert lines[0] == str(copy / "sub")
    assert lines[1]  # bash, not sh
    assert relative.stdout == f"{copy / 'sub'}\n"


def test_it_refuses_a_folder_outside_the_copy(copy, tmp_path):
    (copy / "out").symlink_to(tmp_path)
    box = make(copy)

    for folder in (tmp_path, copy / "..", copy / "out", "/etc"):
        with pytest.raises(ValueError, match="outside the working copy"):
            box.run("true", cwd=folder, timeout=5)


def test_it_writes_inside_the_copy_and_nowhere_else(copy, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    probe = f"sandbox-probe-{uuid.uuid4().hex}"
    box = make(copy, hidden=(str(data),))
    command = (
        f"echo kept > {copy}/sub/made.txt; "
        f"for target in {data}/{probe} /etc/{probe} {REPOSITORY}/{probe}; do "
        '  if echo x > "$target"; then echo "wrote $target"; fi; '
        "done; "
        f"echo x > {tmp_path}/{probe}"  # the private /tmp: it works inside, and stays inside
    )

    result = run(box, command)

    assert (copy / "sub" / "made.txt").read_text() == "kept\n"
    assert "wrote" not in result.stdout
    # each write refused: read-only, or (a checkout under /tmp, as a CI clone may be) a folder
    # the sandbox's private /tmp does not even have
    refused = result.stderr.count("Read-only file system") + result.stderr.count("No such file or directory")
    assert refused == 3 and result.stderr.count("Read-only file system") >= 2
    for folder in (data, Path("/etc"), REPOSITORY, tmp_path):
        assert not (folder / probe).exists()


def test_it_hides_a_secret_in_a_hidden_folder(copy, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "secret_key").write_text("very-secret\n")
    box = make(copy, hidden=(str(data),))

    result = run(box, f"cat {data}/secret_key; ls -A {data}; echo listed")

    assert "very-secret" not in result.stdout + result.stderr
    assert "No such file or directory" in result.stderr
    assert result.stdout == "listed\n"
    unsandboxed = run(make(copy, enabled=False), f"cat {data}/secret_key")
    assert unsandboxed.stdout == "very-secret\n"  # the secret is there to be read without the sandbox


def test_it_hides_the_copy_s_surroundings_even_when_the_copy_lies_in_a_hidden_folder(tmp_path):
    data = tmp_path / "data"
    (data / "runs" / "r1" / "copy").mkdir(parents=True)
    (data / "runs" / "r2").mkdir()
    (data / "runs" / "r2" / "other.txt").write_text("another run's file\n")
    box = make(data / "runs" / "r1" / "copy", hidden=(str(data),))

    result = run(box, f"echo mine > mine.txt && ls -A {data}/runs && cat {data}/runs/r2/other.txt")

    assert (data / "runs" / "r1" / "copy" / "mine.txt").read_text() == "mine\n"
    assert result.stdout == "r1\n"
    assert "another run" not in result.stdout


def test_it_gives_the_command_no_capabilities(copy, tmp_path):
    # Root's capabilities inside its own namespaces would let the command unmount a hidden folder.
    data = tmp_path / "data"
    data.mkdir()

    result = run(make(copy, hidden=(str(data),)), f"grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; umount {data}")

    assert result.stdout.split() == ["CapPrm:", "0" * 16, "CapEff:", "0" * 16, "CapBnd:", "0" * 16]
    assert result.exit_status != 0  # umount refused


def test_it_clears_the_environment(copy, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:pw@db/rysh")
    monkeypatch.setenv("RYSH_SECRET", "rysh-secret")

    for box in (make(copy), make(copy, enabled=False)):
        result = run(box, "env")

        names = {line.split("=", 1)[0] for line in result.stdout.splitlines()}
        assert names <= {"PATH", "LANG", "HOME", "TERM", "PWD", "SHLVL", "_"}
        assert {"PATH", "LANG", "HOME", "TERM"} <= names
        for secret in ("sk-test", "pw@db", "rysh-secret", "ANTHROPIC", "DATABASE", "RYSH_"):
            assert secret not in result.stdout
    assert "HOME=/tmp/home\n" in run(make(copy), "env").stdout


def test_it_gives_a_private_home_and_tmp(copy, tmp_path):
    (tmp_path / "on-the-host.txt").write_text("x")

    result = run(make(copy), f'echo "$HOME"; touch "$HOME/.rc" /tmp/scratch-{copy.parent.name} && ls -A {tmp_path}')

    assert result.stdout == "/tmp/home\ncopy\n"  # the host's files in /tmp stay out of sight
    assert result.stderr == ""
    assert not Path(f"/tmp/scratch-{copy.parent.name}").exists()


def test_it_cannot_reach_a_tcp_port_on_the_host(copy):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    command = f"echo hello > /dev/tcp/127.0.0.1/{port} && echo connected"
    with listener:
        result = run(make(copy), command)
        with pytest.raises(TimeoutError):
            listener.accept()

        assert "connected" not in result.stdout
        assert "Connection refused" in result.stderr
        unsandboxed = run(make(copy, enabled=False), command)  # the listener does answer
        assert unsandboxed.stdout == "connected\n"
        listener.accept()[0].close()


def test_it_cannot_reach_a_unix_socket_and_sees_run_empty(copy, tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "postgresql").mkdir(parents=True)
    path = run_dir / "postgresql" / ".s.PGSQL.5432"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    connect = f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{path}'); print('connected')\""

    with server:
        result = run(make(copy, hidden=(str(run_dir),)), f"ls -A /run; echo listed; {connect}")
        unsandboxed = run(make(copy, enabled=False), connect)

    assert result.stdout == "listed\n"  # /run is empty
    assert "FileNotFoundError" in result.stderr
    assert unsandboxed.stdout == "connected\n"


def test_it_mounts_readonly_binds_readable_but_not_writable(copy, tmp_path):
    git_dir = tmp_path / "git-dir"
    git_dir.mkdir()
    (git_dir / "HEAD").write_text("ref: refs/heads/rysh/run-1\n")
    (copy / ".git").mkdir()
    box = Sandbox(copy, config=SandboxConfig(), readonly=[(git_dir, copy / ".git")])

    result = run(box, "cat .git/HEAD; echo '[core] hooksPath=/tmp' >> .git/config; echo x > .git/HEAD")

    assert result.stdout == "ref: refs/heads/rysh/run-1\n"
    assert result.stderr.count("Read-only file system") == 2
    assert (git_dir / "HEAD").read_text() == "ref: refs/heads/rysh/run-1\n"
    assert not (git_dir / "config").exists()


def test_it_kills_a_command_that_times_out_with_everything_it_started(copy):
    tag = marker()

    result = within(3, lambda: run(make(copy), f"(exec -a {tag}-child sleep 300) & exec -a {tag} sleep 300", timeout=1))

    assert result.killed == "timed out after 1s"
    assert result.exit_status is None
    assert processes_with(tag) == []
    assert result.text() == "killed: timed out after 1s\n(no output)"


def test_it_leaves_no_background_process_behind(copy):
    tag = marker()

    for box in (make(copy), make(copy, enabled=False)):
        result = within(3, lambda box=box: run(box, f"(exec -a {tag} sleep 300) & echo started"))

        assert (result.exit_status, result.stdout) == (0, "started\n")
        assert processes_with(tag) == []


def test_it_leaves_no_process_behind_that_left_the_group(copy):
    tag = marker()
    escape = (
        f"setsid bash -c 'exec -a {tag} sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.2; "
        '[ "$(ps -o sid= -p $!)" -ne $$ ] && echo "left the session"'
    )
    boxes = [make(copy)]  # its PID namespace takes everything along
    if cgroups.places():  # unsandboxed, the command's cgroup finds what left its session
        boxes.append(make(copy, enabled=False))

    for box in boxes:
        result = within(5, lambda box=box: run(box, escape))

        assert result.stdout == "left the session\n"
        assert processes_with(tag) == []


def test_unsandboxed_as_a_normal_user_nothing_in_the_commands_session_outlives_it():
    """With the sandbox off and a worker that is not root (no cgroup of its own to make), a
    background job in a process group of its own (`set -m`) used to outlive the command: only
    the command's group was killed. Now its whole session is; only a process that starts a
    session of its own (setsid) still can escape there, as the manual says."""
    if os.geteuid() != 0:
        pytest.skip("needs root to start a worker as another user (nobody)")
    tag = marker()
    folder = Path(tempfile.mkdtemp(prefix="rysh-normal-user-"))  # pytest's own folders are root's alone
    folder.chmod(0o777)
    worker = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", NORMAL_USER_WORKER],
        cwd=folder,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPOSITORY), "TAG": tag, "COPY": str(folder)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    try:
        assert worker.returncode == 0, worker.stderr
        assert worker.stdout == "started\n"
        assert processes_with(tag) == []
    finally:
        for pid in processes_with(tag):
            os.kill(pid, 9)
        shutil.rmtree(folder, ignore_errors=True)


NORMAL_USER_WORKER = """
import os
from agents.sandbox import Sandbox, SandboxConfig
command = f"set -m; (exec -a {os.environ['TAG']} sleep 300) & echo started"
result = Sandbox(os.environ["COPY"], config=SandboxConfig(enabled=False)).run(command, cwd=os.environ["COPY"], timeout=20)
print(result.stdout, end="")
"""


def test_it_kills_the_command_when_the_worker_is_lost(copy):
    tag = marker()
    worker = subprocess.Popen(
        [sys.executable, "-c", LOST_WORKER, str(copy)],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY), "TAG": tag},
    )
    try:
        deadline = time.monotonic() + 10
        while not started_as(tag):
            assert time.monotonic() < deadline and worker.poll() is None, "the command never started"
            time.sleep(0.05)
    finally:
        worker.kill()
        worker.wait()

    deadline = time.monotonic() + 2
    while processes_with(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(tag) == []


LOST_WORKER = """
import os, sys
from agents.sandbox import Sandbox, SandboxConfig
Sandbox(sys.argv[1], config=SandboxConfig()).run(f"exec -a {os.environ['TAG']} sleep 300", cwd=sys.argv[1], timeout=300)
"""


def test_it_kills_a_command_when_the_run_is_cancelled(copy):
    tag = marker()
    cancel_at = time.monotonic() + 0.5

    def cancelled():
        return "the run was cancelled" if time.monotonic() >= cancel_at else None

    box = make(copy)
    result = within(
        2, lambda: run(box, f"echo begun; exec -a {tag} sleep 300", timeout=60, cancelled=cancelled, poll=0.1)
    )

    assert result.killed == "the run was cancelled"
    assert result.stdout == "begun\n"
    assert result.seconds < 1.5
    assert processes_with(tag) == []


def test_it_keeps_head_and_tail_of_a_flood_in_little_memory(copy):
    box = make(copy, keep_bytes=1000)
    command = "printf start; head -c 50000000 /dev/zero | tr '\\0' x; printf end; head -c 3000000 /dev/zero >&2"

    tracemalloc.start()
    try:
        result = run(box, command)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert result.exit_status == 0
    assert (result.stdout_bytes, result.stderr_bytes) == (50_000_008, 3_000_000)
    assert result.stdout == "start" + "x" * 995 + "\n[... 49998008 bytes omitted ...]\n" + "x" * 997 + "end"
    assert result.stderr == "\0" * 1000 + "\n[... 2998000 bytes omitted ...]\n" + "\0" * 1000
    assert peak < 2 * 1024 * 1024


def test_it_kills_a_command_past_the_output_limit(copy):
    result = within(10, lambda: run(make(copy, output_bytes=1024 * 1024), "yes", timeout=60))

    assert result.killed == "output limit (1 MB) passed"
    assert result.exit_status is None
    # killed promptly: what was still in the pipe is counted too, and a busy machine lets a few
    # more megabytes through before the kill lands; an unbounded `yes` would print gigabytes
    assert 1024 * 1024 < result.stdout_bytes < 32 * 1024 * 1024
    assert result.stdout.startswith("y\ny\n") and "bytes omitted" in result.stdout


def test_it_bounds_the_number_of_processes(copy):
    if os.geteuid() == 0 and not any("pids" in place.controllers for place in cgroups.places()):
        pytest.skip("the kernel ignores ulimit -u for root, and this root worker cannot make a pids cgroup")
    tag = marker()
    fork_100 = (
        f'python3 -c "# {tag}\n'
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while n < 100:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(300)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as error:\n"
        "    print('stopped after', n, error)\n"
        "print('done')\""
    )

    bounded = run(make(copy, processes=32), fork_100)
    roomy = run(make(copy, processes=512), fork_100)

    assert "Resource temporarily unavailable" in bounded.stdout
    assert bounded.stdout.endswith("done\n")
    assert int(bounded.stdout.split()[2]) < 32
    assert roomy.stdout == "done\n"  # the same 100 processes fit under the default limit
    assert processes_with(tag) == []


def test_it_limits_memory(copy):
    box = make(copy, memory_mb=256)
    allocate = "python3 -c 'bytearray({} * 1024 * 1024); print(\"allocated\")'"

    too_much = run(box, allocate.format(512))
    enough = run(box, allocate.format(64))

    assert too_much.exit_status == 1
    assert "MemoryError" in too_much.stderr
    assert enough.stdout == "allocated\n"


def test_it_limits_the_size_of_a_file(copy):
    result = run(make(copy, file_size_mb=1), "head -c 3000000 /dev/zero > big; echo $?")

    assert (copy / "big").stat().st_size == 1024 * 1024
    assert result.stdout.strip() not in ("", "0")


def test_it_says_whether_the_sandbox_can_run_here(copy):
    sandbox_problem.cache_clear()
    missing = SandboxConfig(bwrap="/nonexistent/bwrap")

    assert sandbox_problem(SandboxConfig()) is None
    problem = sandbox_problem(missing)
    assert "bubblewrap is not installed" in problem and "/nonexistent/bwrap" in problem
    assert "RYSH_SANDBOX=off" in problem
    assert sandbox_problem(SandboxConfig(enabled=False, bwrap="/nonexistent/bwrap")) is None
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed"):
        Sandbox(copy, config=missing).run("true", cwd=copy, timeout=5)


def test_it_caches_the_answer_until_cleared(copy, monkeypatch):
    sandbox_problem.cache_clear()
    calls = []
    real_run = sandbox.subprocess.run

    def counting_run(*args, **kwargs):
        calls.append(args)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(sandbox.subprocess, "run", counting_run)
    config = SandboxConfig(hidden=(str(copy),))

    assert sandbox_problem(config) is None and sandbox_problem(config) is None
    assert len(calls) == 1
    sandbox_problem.cache_clear()
    assert sandbox_problem(config) is None
    assert len(calls) == 2


def test_it_reports_a_sandbox_that_cannot_be_set_up(copy, tmp_path):
    box = Sandbox(copy, config=SandboxConfig(), readonly=[(tmp_path / "missing", copy / ".git")])

    with pytest.raises(SandboxUnavailable, match="could not set up the sandbox.*missing"):
        run(box, "true")


def test_it_runs_unsandboxed_when_an_admin_turned_it_off(copy, tmp_path):
    probe = tmp_path / f"probe-{uuid.uuid4().hex}"

    result = run(make(copy, enabled=False), f"echo x > {probe}; echo $HOME; env | wc -l")

    assert result.sandboxed is False
    assert probe.exists()  # nothing confines it: that is what turning the sandbox off means
    home, count = result.stdout.split()
    assert home != os.environ.get("HOME") and not Path(home).exists()  # a private HOME, removed after
    assert int(count) <= 7
    assert result.text().startswith("exit status: 0\nnote: ran without the sandbox")


def test_it_reads_both_streams_at_once(copy):
    # Either stream alone fills its pipe; a reader of one at a time would wait forever.
    command = "for i in $(seq 200); do head -c 10000 /dev/zero; head -c 10000 /dev/zero >&2; done"
    result = within(10, lambda: run(make(copy), command, timeout=60))

    assert (result.stdout_bytes, result.stderr_bytes, result.killed) == (2_000_000, 2_000_000, None)


def test_it_runs_with_sh_when_there_is_no_bash(copy):
    bin_dir = copy / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "cat"):
        (bin_dir / tool).symlink_to(f"/bin/{tool}")

    result = run(make(copy, path=str(bin_dir)), 'echo "[$BASH_VERSION]" | cat')

    assert result.stdout == "[]\n"
