"""Reads for the run page, the diff page and the CLI: what a run changed in its working copy."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from workspaces import copies
from workspaces.copies import Copy, CopyError
from workspaces.models import Workspace, WorkspacePass, WorkspaceState

LINES_PER_PAGE = 400


def workspace_of(run) -> Workspace | None:
    return Workspace.objects.filter(run=run).select_related("carried_from", "kept_by").first()


def working_folder(run) -> str | None:
    """Where the run's commands ran: its copy's workdir, as CodingTools starts there (what
    `{{workdir}}` was filled with); None for a run without a copy."""
    workspace = Workspace.objects.filter(run=run).only("home", "workdir").first()
    return None if workspace is None else str(Copy(Path(workspace.home)).tree / workspace.workdir)


def workspace_context(run, can: frozenset[str]) -> dict:
    """The run page's "Changes" section: the whole run's stat as last measured (after each tool
    call that may write, and at each pass's end), and the buttons the copy's state allows this
    person: Keep while there is work not kept yet, Discard on a finished run's unkept work."""
    workspace = workspace_of(run) if run.kind != "web" else None  # task and code runs may have a copy
    if workspace is None:
        return {}
    stat = workspace.stat
    settled = "edit" in can and workspace.on_disk and workspace.changed
    return {
        "workspace": workspace,
        "changes": stat,
        "changes_added": sum(row["added"] or 0 for row in stat),
        "changes_removed": sum(row["removed"] or 0 for row in stat),
        "can_keep": settled and run.state in ("paused", "finished") and not workspace.kept_as_is,
        "can_discard": settled and run.state == "finished" and workspace.state == WorkspaceState.ACTIVE,
    }


@dataclass
class DiffLine:
    kind: str  # file | hunk | add | del | ctx | meta
    text: str


@dataclass
class Diff:
    workspace: Workspace
    scope: str  # "the whole run" or "pass N"
    pass_number: int | None = None
    passes: list[int] = field(default_factory=list)  # passes that have a measured tree
    stat: list[dict] = field(default_factory=list)
    lines: list[DiffLine] = field(default_factory=list)
    page: int = 1
    pages: int = 1
    missing: str = ""  # why no diff can be shown (the copy is gone)
    truncated: bool = False


def trees_for(workspace: Workspace, pass_number: int | None) -> tuple[str, str] | None:
    """(old, new) trees of the whole run (its start commit against the copy now) or one pass
    (the tree before it against the tree it ended with); None for a pass not measured."""
    copy = Copy(Path(workspace.home))
    if pass_number is None:
        return workspace.base_commit, copies.snapshot(copy, base=workspace.base_commit)
    rows = {p.pass_number: p.tree for p in WorkspacePass.objects.filter(workspace=workspace)}
    if pass_number not in rows:
        return None
    earlier = [n for n in rows if n < pass_number]
    before = rows[max(earlier)] if earlier else workspace.start_tree
    return before, rows[pass_number]


def diff_text(workspace: Workspace, pass_number: int | None = None, *, binary: bool = False) -> str:
    """The unified diff (a patch `git apply` takes when `binary`); raises CopyError when the
    copy is gone or the pass was not measured."""
    if not workspace.on_disk or not Copy(Path(workspace.home)).exists:
        raise CopyError(f"the working copy of run #{workspace.run_id} is {workspace.get_state_display()}")
    trees = trees_for(workspace, pass_number)
    if trees is None:
        raise CopyError(f"pass {pass_number} of run #{workspace.run_id} has no measured working copy")
    return copies.patch(Copy(Path(workspace.home)), *trees, binary=binary)


def diff_view(workspace: Workspace, *, pass_number: int | None, page: int) -> Diff:
    passes = list(WorkspacePass.objects.filter(workspace=workspace).values_list("pass_number", flat=True))
    scope = "the whole run" if pass_number is None else f"pass {pass_number}"
    diff = Diff(workspace=workspace, scope=scope, pass_number=pass_number, passes=passes)
    if pass_number is not None:
        diff.stat = next(
            (p.stat for p in WorkspacePass.objects.filter(workspace=workspace, pass_number=pass_number)), []
        )
    else:
        diff.stat = workspace.stat
    try:
        text = diff_text(workspace, pass_number)
        if pass_number is None:
            copy = Copy(Path(workspace.home))
            diff.stat = [s.row() for s in copies.stat(copy, *trees_for(workspace, None))]
    except CopyError as exc:
        diff.missing = str(exc)
        return diff
    if len(text) > copies.PATCH_LIMIT:
        text, diff.truncated = text[: copies.PATCH_LIMIT], True
    lines = text.splitlines()
    diff.pages = max(1, -(-len(lines) // LINES_PER_PAGE))
    diff.page = min(max(1, page), diff.pages)
    start = (diff.page - 1) * LINES_PER_PAGE
    diff.lines = [DiffLine(_kind(line), line) for line in lines[start : start + LINES_PER_PAGE]]
    return diff


def stat_lines(stat: list[dict]) -> list[str]:
    """A stored stat as `git diff --stat` in short: one line a file (`M pkg/calc.py  +1 -1`)."""
    lines = []
    for row in stat:
        counts = "binary" if row["added"] is None else f"+{row['added']} -{row['removed']}"
        lines.append(f"{row['status']} {row['path']}  {counts}")
    return lines


def _kind(line: str) -> str:
    if line.startswith("diff --git"):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith(("+++", "---", "index ", "new file", "deleted file", "similarity", "rename ", "Binary")):
        return "meta"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def shown_state(workspace: Workspace) -> str:
    if workspace.state == WorkspaceState.HANDED_OVER and hasattr(workspace, "carried_to"):
        return f"handed over to run #{workspace.carried_to.run_id}"
    return workspace.get_state_display()
