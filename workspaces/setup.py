"""A coding loop's `setup:` (docs/coding-loops.md, "The project's own toolchain"): its commands
run once in the run's copy, when the worker has made it and before the first model call, in the
sandbox, with the network of the setup proxy (agents/egress_proxy.py: only the hosts an admin
listed) and the repository's dependency caches read-write (workspaces/caches.py).

A continue finds the copy set up and a resume carries it over with its setup: neither runs it
again. A command that exits non-zero or is killed (RYSH_SETUP_TIMEOUT for all of them together,
a cancel, a stop) ends the run with that cause (SetupFailed) and nothing spent on a model.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from contextlib import nullcontext

from django.conf import settings

from agents.egress_proxy import SetupProxy, proxy_python
from agents.sandbox import CommandResult, Sandbox, SandboxConfig, interpreter_binds
from workspaces.caches import cache_for
from workspaces.copies import Copy
from workspaces.models import SetupState, Workspace

HEAD_CHARS = 4000  # of each command's output, the first and the last characters kept
TAIL_CHARS = 8000
SHOWN_CHARS = 300  # of a command or its last line in a cause

Record = Callable[..., None]  # record(message, **data): one of the run's events


class SetupFailed(Exception):
    """A setup command failed or was killed; the message is the run's cause."""


def workspace_setup(
    *,
    workspace: Workspace,
    copy: Copy,
    commands: tuple[str, ...],
    config: SandboxConfig,
    cancelled: Callable[[], str | None],
    record: Record,
) -> None:
    """Run the recipe's setup in the copy unless it ran there already; raises SetupFailed."""
    if workspace.setup_state == SetupState.DONE or _carried_over(workspace, record):
        return
    cache_for(workspace.source).prepare(workspace.source)
    _save(workspace, SetupState.RUNNING, [])
    hosts = _hosts()
    record(
        f"setup: {len(commands)} command(s) in {workspace.workdir}, "
        + (
            f"fetching only from {', '.join(hosts) or 'no host'} through the setup proxy"
            if config.enabled
            else "unsandboxed, with the worker's network (RYSH_SANDBOX=off)"
        )
    )
    proxy = _proxy() if config.enabled else None
    with proxy if proxy is not None else nullcontext():
        _Setup(workspace, copy, config, proxy, cancelled, record).run_all(commands)
    _save(workspace, SetupState.DONE, workspace.setup)


def _hosts() -> list[str]:
    return [*settings.RYSH_SETUP_ALLOW_HOSTS, *settings.RYSH_SETUP_ALLOW_PRIVATE_HOSTS]


def _proxy() -> SetupProxy:
    return SetupProxy(
        allowed_hosts=tuple(settings.RYSH_SETUP_ALLOW_HOSTS),
        private_hosts=tuple(settings.RYSH_SETUP_ALLOW_PRIVATE_HOSTS),
    )


class _Setup:
    """One setup's commands in one copy's workdir, through a started proxy (None: the sandbox is
    off, and so is the proxy)."""

    def __init__(self, workspace, copy, config, proxy: SetupProxy | None, cancelled, record: Record):
        self.workspace, self.proxy, self.cancelled, self.record = workspace, proxy, cancelled, record
        cache = cache_for(workspace.source)
        environment = cache.environment(writing=True)
        readonly = [(copy.git_dir, copy.tree / ".git")]
        if proxy is not None:
            environment |= proxy.environment
            readonly += [*proxy.binds, *interpreter_binds(config)]
        self.sandbox = Sandbox(
            copy.tree, config=config, readonly=readonly, writable=cache.binds(), environment=environment
        )
        self.shell = shutil.which("bash", path=config.path) or "/bin/sh"

    def run_all(self, commands: tuple[str, ...]) -> None:
        deadline = time.monotonic() + settings.RYSH_SETUP_TIMEOUT
        ran: list[dict] = []
        for command in commands:
            left = deadline - time.monotonic()
            entry = _entry(command, self.run(command, left) if left > 0 else None)
            ran.append(entry)
            _save(self.workspace, SetupState.RUNNING, ran)
            refused = self.proxy.take_refused() if self.proxy is not None else []
            for why in refused:
                self.record(f"setup: the proxy refused: {why}", refused=why)
            self.record(f"setup: {_said(entry)}", **{k: v for k, v in entry.items() if k != "output"})
            cause = _failure(entry, stopped=bool(self.cancelled()))
            if cause:
                _save(self.workspace, SetupState.FAILED, ran)
                raise SetupFailed(cause + (f" (the proxy refused: {refused[-1]})" if refused else ""))

    def run(self, command: str, timeout: float) -> CommandResult:
        merged = f"exec 2>&1\n{command}"  # one log, in the order it was written
        if self.proxy is not None:
            merged = self.proxy.wrap(merged, python=proxy_python(), shell=self.shell)
        return self.sandbox.run(merged, cwd=self.workspace.workdir, timeout=timeout, cancelled=self.cancelled)


def _entry(command: str, result: CommandResult | None) -> dict:
    if result is None:  # the time ran out before it could start
        return {"command": command, "exit_status": None, "killed": _timed_out(), "seconds": 0.0, "output": ""}
    killed = _timed_out() if result.killed and result.killed.startswith("timed out") else result.killed
    return {
        "command": command,
        "exit_status": result.exit_status,
        "killed": killed,
        "seconds": result.seconds,
        "output": _kept(result.stdout + result.stderr),  # stderr: only what came before `exec 2>&1`
    }


def _timed_out() -> str:
    return f"timed out: setup took longer than RYSH_SETUP_TIMEOUT ({settings.RYSH_SETUP_TIMEOUT}s)"


def _kept(output: str) -> str:
    if len(output) <= HEAD_CHARS + TAIL_CHARS:
        return output
    omitted = len(output) - HEAD_CHARS - TAIL_CHARS
    return f"{output[:HEAD_CHARS]}\n[... {omitted} characters omitted ...]\n{output[-TAIL_CHARS:]}"


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1][:SHOWN_CHARS] if lines else "(no output)"


def _said(entry: dict) -> str:
    command = _short(entry["command"])
    if entry["killed"]:
        return f"`{command}` killed: {entry['killed']}"
    said = f"`{command}` exited {entry['exit_status']} in {entry['seconds']:g}s"
    return said if entry["exit_status"] == 0 else f"{said}: {_last_line(entry['output'])}"


def _failure(entry: dict, *, stopped: bool) -> str | None:
    """The run's cause when this command ends the setup, else None."""
    command = _short(entry["command"])
    if entry["killed"]:
        return f"setup {'stopped' if stopped else 'failed'}: `{command}` killed: {entry['killed']}"
    if entry["exit_status"] != 0:
        return f"setup failed: `{command}` exited {entry['exit_status']}: {_last_line(entry['output'])}"
    return None


def _short(command: str) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 1] + "…"


def _carried_over(workspace: Workspace, record: Record) -> bool:
    """A resume's copy was set up by the run it came from: its setup is this run's too."""
    previous = workspace.carried_from
    if previous is None or previous.setup_state != SetupState.DONE:
        return False
    _save(workspace, SetupState.DONE, previous.setup)
    record(f"setup: ran when run #{previous.run_id} made this copy; not run again")
    return True


def _save(workspace: Workspace, state: str, ran: list[dict]) -> None:
    workspace.setup_state, workspace.setup = state, ran
    Workspace.objects.filter(pk=workspace.pk).update(setup_state=state, setup=ran)


def setup_line(commands: tuple[str, ...]) -> str:
    """What a dry run says of a recipe's setup: its commands and where they may fetch from."""
    hosts = _hosts()
    shown = "; ".join(f"`{_short(command)}`" for command in commands)
    reach = f"fetching only from {', '.join(hosts)}" if hosts else "no network (RYSH_SETUP_ALLOW_HOSTS is empty)"
    return f"setup: {len(commands)} command(s) when the copy is made ({shown}), {reach}"


def agent_sandbox_extras(workspace: Workspace) -> tuple[list, dict[str, str]]:
    """The dependency cache of the copy's repository for the agent's commands: read-only binds
    and the variables that find it, or nothing when no setup made one."""
    cache = cache_for(workspace.source)
    if not cache.exists:
        return [], {}
    cache.touch()
    return cache.binds(), cache.environment(writing=False)
