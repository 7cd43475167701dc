"""agents.sandbox: a command's memory is bounded all together (docs/coding-loops.md, "The
sandbox") — its in-memory folders each have a size, its processes and those files share one
memory cgroup where the worker can make one, and the working copy is watched as it grows.

Real bwrap, real cgroups, real files: each test writes past a limit and shows where it stopped,
reading the host's own counters (/proc/meminfo's Shmem) rather than the sandbox's word."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from agents import cgroups, sandbox
from agents.sandbox import CommandResult, Sandbox, SandboxConfig, server_wrap

MB = 1024 * 1024


@pytest.fixture
def copy(tmp_path):
    folder = tmp_path / "copy"
    folder.mkdir()
    return folder


def run(box: Sandbox, command: str, *, timeout: float = 60) -> CommandResult:
    return box.run(command, cwd=box.root, timeout=timeout)


def shmem() -> int:
    """The host's shared memory in bytes: what every tmpfs holds (and SysV/POSIX shm)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no Shmem line in /proc/meminfo")


class ShmemPeak:
    """How far the host's shared memory rose above where it started while the block ran."""

    def __enter__(self) -> ShmemPeak:
        self.start = self.peak = shmem()
        self.running = True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while self.running:
            self.peak = max(self.peak, shmem())
            time.sleep(0.01)

    def __exit__(self, *exc) -> None:
        self.running = False
        self.thread.join()

    @property
    def rise(self) -> int:
        return self.peak - self.start


def size_on_disk(folder: Path) -> int:
    return sum(path.stat().st_blocks * 512 for path in folder.rglob("*") if path.is_file())


def memory_cgroup() -> bool:
    """Whether this worker can give a command a memory cgroup (a root worker, or a delegated
    cgroup); where it cannot, only the per-process limit and the folders' sizes hold."""
    return any("memory" in place.controllers for place in cgroups.places())


def test_a_command_that_writes_past_its_memory_limit_fails_and_the_hosts_memory_stays_within_it(copy):
    """/tmp, /dev/shm and the working copy, written together past a 256 MB limit: each folder in
    memory stops at its size, the copy's watch ends the command, and the host's shared memory
    never rises by the limit. Before, /tmp and /dev/shm took what they were given (half the
    host's memory each) and the copy had no bound."""
    box = Sandbox(copy, config=SandboxConfig(memory_mb=256, workspace_mb=64))
    command = (
        "head -c 200M /dev/zero > /tmp/fill; echo tmp $?; "
        "head -c 200M /dev/zero > /dev/shm/fill; echo shm $?; "
        "for i in $(seq 200); do head -c 1M /dev/zero >> fill; sleep 0.01; done; echo finished"
    )

    with ShmemPeak() as memory:
        result = run(box, command)

    assert "tmp 1\n" in result.stdout and "shm 1\n" in result.stdout  # full: the command's own error
    assert result.stderr.count("No space left on device") == 2
    assert result.killed is not None and result.killed.startswith("the working copy grew past")
    assert "RYSH_WORKSPACE_MAX_MB (64 MB)" in result.killed
    assert "finished" not in result.stdout
    assert memory.rise < 256 * MB, f"the host's shared memory rose by {memory.rise // MB} MB"
    assert size_on_disk(copy) < 128 * MB


def test_the_folders_in_memory_have_sizes_and_dev_takes_no_files(copy):
    result = run(Sandbox(copy, config=SandboxConfig(memory_mb=256)), "df -k /tmp /dev/shm /run; touch /dev/file")

    sizes = {line.split()[-1]: int(line.split()[1]) for line in result.stdout.splitlines()[1:]}
    assert sizes == {"/tmp": 128 * 1024, "/dev/shm": 64 * 1024, "/run": 16 * 1024}
    assert "'/dev/file': Read-only file system" in result.stderr


def test_a_commands_processes_and_its_files_in_memory_share_one_limit(copy):
    """120 MB in /tmp and 60 MB in /dev/shm fit their folders, a 150 MB process fits its
    address space; all three together pass the command's 256 MB, and the command is ended
    with a tool error that says so."""
    if not memory_cgroup():
        pytest.skip("this worker cannot make a memory cgroup (not root, no delegated cgroup)")
    box = Sandbox(copy, config=SandboxConfig(memory_mb=256))
    command = (
        "head -c 120M /dev/zero > /tmp/fill && head -c 60M /dev/zero > /dev/shm/fill && "
        'python3 -c \'x = b"x" * (150 << 20); print("allocated")\'; sleep 5; echo after'
    )

    started = time.monotonic()
    result = run(box, command)

    assert result.killed == (
        "memory limit passed: the command's processes and its files in /tmp and /dev/shm may use "
        "256 MB together (RYSH_SANDBOX_MEMORY_MB)"
    )
    assert "allocated" not in result.stdout and "after" not in result.stdout
    assert time.monotonic() - started < 4  # ended at once, not left to go on without its process


def test_the_same_process_and_files_fit_a_larger_limit(copy):
    box = Sandbox(copy, config=SandboxConfig(memory_mb=1024))
    command = (
        "head -c 120M /dev/zero > /tmp/fill && head -c 60M /dev/zero > /dev/shm/fill && "
        'python3 -c \'x = b"x" * (150 << 20); print("allocated")\''
    )

    result = run(box, command)

    assert (result.killed, result.stdout) == (None, "allocated\n")


def test_a_copy_already_within_its_limit_runs_and_one_past_it_is_stopped_and_says_how_much(copy):
    (copy / "data").write_bytes(b"x" * (3 * MB))
    roomy = run(Sandbox(copy, config=SandboxConfig(workspace_mb=8)), "head -c 2M /dev/zero > more; echo ok")
    tight = run(Sandbox(copy, config=SandboxConfig(workspace_mb=8)), "head -c 4M /dev/zero > most; echo ok")

    assert (roomy.killed, roomy.stdout) == (None, "ok\n")
    assert tight.killed is not None
    assert tight.killed.startswith("the working copy grew past RYSH_WORKSPACE_MAX_MB (8 MB): it holds 9 MB")


def test_a_sandboxed_server_has_the_same_bounds(tmp_path):
    """A stdio MCP server runs for a whole pass: its /tmp and /dev/shm have sizes, and its
    processes and those files share one memory limit."""
    config = SandboxConfig(memory_mb=160)
    fill = (
        "head -c 100M /dev/zero > /tmp/fill; echo tmp $?; head -c 100M /dev/zero > /dev/shm/fill; echo shm $?; "
        'python3 -c \'x = b"x" * (100 << 20); print("allocated")\''
    )

    done = subprocess.run([*server_wrap(config), "/bin/sh", "-c", fill], capture_output=True, text=True, timeout=60)

    assert "tmp 1\n" in done.stdout and "shm 1\n" in done.stdout
    if memory_cgroup():  # 80 MB in /tmp and 40 in /dev/shm leave no room for 100 more
        assert "allocated" not in done.stdout


def test_past_its_limit_the_copy_may_shrink_but_not_grow(copy):
    box = Sandbox(copy, config=SandboxConfig(workspace_mb=16))
    grown = run(box, "head -c 20M /dev/zero > big; echo ok")
    more = run(box, "echo more > small")
    removed = run(box, "sleep 0.6; rm big; echo removed")  # measured at its ticks meanwhile
    after = run(box, "echo fine > small")

    assert grown.killed is not None and more.killed is not None  # the copy stays past it, and grows
    assert (removed.killed, removed.stdout) == (None, "removed\n")
    assert (after.killed, after.stdout) == (None, "")


def test_a_bubblewrap_without_size_is_said_to_be_too_old(tmp_path):
    """The folders' sizes need bwrap's --size (0.5.0, 2021): an older one is not a sandbox."""
    old = tmp_path / "bwrap"
    old.write_text(
        '#!/bin/sh\nfor a; do [ "$a" = --size ] && { echo "bwrap: Unknown option --size" >&2; exit 1; }; done\n'
        'exec bwrap "$@"\n'
    )
    old.chmod(0o755)

    problem = sandbox.sandbox_problem(SandboxConfig(bwrap=str(old)))

    assert problem is not None and "is too old: it has no --size (0.5.0 or later has" in problem
    assert "RYSH_SANDBOX=off" in problem
