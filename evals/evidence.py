"""What a finished run did, as grading reads it (docs/evals.md): an Evidence from its rows.

- changed files: the run's working copy against the commit it started from, as git names them
  from the copy's root (a renamed file counts under both names: it left one path and took
  another). Read from the copy's own git when it is still on disk (the recorded trees, no new
  snapshot), else from the stat the run recorded; a run without a working copy changed none.
- commands: the `bash` tool's calls whose command ran (their result is the sandbox's "exit
  status: …" or "killed: …"), or whose outcome is unknown (a lost worker: it may have run). Calls
  refused before running (an approval said no, the run was cancelled, the loop guard, the time
  was up) are not commands the run ran.
- final answer: the text of the run's last task or wrap-up step that has text (the judge's
  steps are not the agent's answer).
- results: the run's result files as its newest snapshot kept each one (immutable: a later run
  of the recipe writing the same folder changes nothing), else as they are on disk in its
  results folder; text only (a file with NUL bytes or that is not UTF-8 is skipped), each read
  up to RESULT_CAP_BYTES.
- tokens: `Run.tokens_counted`, the ledger's settled total for the run (task, wrap-up and judge
  calls; a lost or cancelled call at its reservation), the figure a run's ceiling is held to.
"""

from __future__ import annotations

from pathlib import Path

from agents.coding_tools import BASH_TOOL
from evals.grading import Evidence
from runs.engine.verdicts import result_files
from runs.models import Phase, Run, Step
from runs.results.snapshots import open_result, run_snapshot_files
from workspaces import copies
from workspaces.models import Workspace

RESULT_CAP_BYTES = 256 * 1024
BASH = BASH_TOOL["name"]  # the coding shell tool (agents/coding_tools.py)
# what the coding tools answer for a command the sandbox ran (agents/sandbox.py Outcome.text)
_RAN = ("exit status:", "killed:")
_UNKNOWN = "outcome unknown:"  # runs/engine_passes.py LOST_CALL: the worker died while it ran


def evidence_of(run: Run) -> Evidence:
    return Evidence(
        changed_files=changed_files(run),
        commands=commands_run(run),
        final_answer=final_answer(run),
        results=results_of(run),
        tokens=run.tokens_counted,
    )


def changed_files(run: Run) -> tuple[str, ...]:
    workspace = Workspace.objects.filter(run=run).first()
    if workspace is None:
        return ()
    copy = copies.Copy(Path(workspace.home))
    if workspace.on_disk and copy.exists and workspace.base_commit and workspace.tree:
        try:
            raw = copies.git(
                copy,
                "diff",
                "--no-ext-diff",
                "--ignore-submodules=all",
                "--no-renames",
                "--name-only",
                "-z",
                workspace.base_commit,
                workspace.tree,
            )
            return tuple(sorted(filter(None, raw.split("\0"))))
        except copies.CopyError:
            pass  # the recorded stat below is what the run page shows too
    return tuple(sorted({row["path"] for row in workspace.stat or () if row.get("path")}))


def commands_run(run: Run) -> tuple[str, ...]:
    commands = []
    steps = Step.objects.filter(run_pass__run=run).order_by("run_pass__number", "number")
    for step in steps.only("tool_calls", "tool_results"):
        outcomes = {r.get("tool_use_id"): r for r in step.tool_results or () if isinstance(r, dict)}
        for call in step.tool_calls or ():
            if not isinstance(call, dict) or call.get("name") != BASH:
                continue
            command = (call.get("input") or {}).get("command")
            if isinstance(command, str) and command.strip() and _ran(outcomes.get(call.get("id"))):
                commands.append(command)
    return tuple(commands)


def _ran(outcome: dict | None) -> bool:
    if outcome is None:
        return True  # no result recorded: the call may have run
    text = _content_text(outcome.get("content"))
    return text.startswith(_RAN) or text.startswith(_UNKNOWN)


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # text and image blocks
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return ""


def final_answer(run: Run) -> str:
    step = (
        Step.objects.filter(run_pass__run=run)
        .exclude(leg=Phase.JUDGING)
        .exclude(text="")
        .order_by("-run_pass__number", "-number")
        .only("text")
        .first()
    )
    return step.text if step is not None else ""


def results_of(run: Run) -> dict[str, str]:
    kept = run_snapshot_files(run)
    if kept:
        found = {}
        for row in kept:
            handle = open_result(row)
            if handle is not None:
                with handle:
                    if (text := _text(handle.read(RESULT_CAP_BYTES))) is not None:
                        found[row.name] = text
        return dict(sorted(found.items()))
    return _on_disk(run)


def _on_disk(run: Run) -> dict[str, str]:
    if not run.output_dir:
        return {}
    folder = Path(run.output_dir)
    since = run.started_at.timestamp() - 1 if run.started_at else None  # the folder is the recipe's
    found = {}
    for path in result_files(folder, since=since):
        try:
            with path.open("rb") as handle:
                data = handle.read(RESULT_CAP_BYTES)
        except OSError:
            continue
        if (text := _text(data)) is not None:
            found[path.relative_to(folder).as_posix()] = text
    return dict(sorted(found.items()))


def _text(data: bytes) -> str | None:
    """UTF-8 text, or None for a binary file. A file cut at the cap may end mid-character."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and len(data) >= RESULT_CAP_BYTES:
            return data[: exc.start].decode("utf-8")
        return None
