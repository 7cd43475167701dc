"""run-report.md in the results folder (docs/running-loops.md), rewritten whenever a run pauses or ends."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.utils import timezone

from budgets.plan import summary_lines
from budgets.units import format_duration, format_duration_go, format_tokens
from runs.engine.verdicts import REPORT_NAME
from runs.results import snapshots
from workspaces.models import Workspace
from workspaces.selectors import stat_lines

GATE_REPORT_LINES = 40  # of a pass's until_command output, the report keeps the last lines


def cache_hit_percent(*, input_tokens: int, cache_read: int, cache_write: int) -> float | None:
    total = input_tokens + cache_read + cache_write
    return None if total == 0 else 100.0 * cache_read / total


def plan_lines_from_snapshot(plan: dict) -> list[str]:
    """The plan a run was armed with (stored as a dict), in rysh's three lines."""
    per = plan.get("per_pass", {})
    return summary_lines(
        loop_enabled=plan.get("loop_enabled", False),
        passes=plan.get("passes", 1),
        tokens=per.get("tokens", 0),
        seconds=per.get("seconds", 0),
        # a plan with no wrap-up leg (no takeover prompt) has no takeover to print
        takeover_when=plan.get("takeover_when", 90) if (plan.get("split") or {}).get("takeover") else None,
        outer_tokens=plan.get("outer_tokens", 0),
        outer_seconds=plan.get("outer_seconds", 0),
    )


def _grant_lines(run) -> list[str]:
    """Grants raised the outer ceilings above (docs/spend.md): who, when, what, after which end."""
    grants = list(run.grants.select_related("granted_by")) if run.pk else []
    if not grants:
        return []
    lines = ["## Grants", ""]
    for grant in grants:
        who = grant.granted_by.username if grant.granted_by else "the CLI"
        lines.append(f"- {grant.created_at:%Y-%m-%d %H:%M} by {who}: {grant.describe()} after '{grant.cause_before}'")
    return [*lines, "", "The loop plan above includes them.", ""]


def render_report(run) -> str:
    plan = run.plan
    per = plan.get("per_pass", {})
    end = run.ended_at or timezone.now()
    took = (end - run.started_at).total_seconds() if run.started_at else 0
    hit = cache_hit_percent(
        input_tokens=run.input_tokens, cache_read=run.cache_read_tokens, cache_write=run.cache_write_tokens
    )
    cap = plan.get("worst_tokens", 0)
    lines = [
        f"# Run report: {run.target} (run #{run.pk})",
        "",
        f"- model: {run.executor_model} via {run.provider}"
        + (" — OFFLINE SCRIPTED MODEL, not Claude" if run.provider == "scripted" else ""),
        f"- arguments: {' '.join(run.args) or '(none)'}",
        f"- started: {run.started_at.isoformat() if run.started_at else '-'}",
        f"- ended: {run.ended_at.isoformat() if run.ended_at else '(not yet)'}",
        f"- duration: {format_duration(int(took))}",
        f"- state: {run.state_label}",
        f"- cause: {run.cause or '-'}",
        f"- per-pass budget: {format_tokens(per.get('tokens', 0))} ({per.get('tokens', 0)} tokens), "
        f"{per.get('steps', 0)} steps, {format_duration_go(per.get('seconds', 0))}",
        f"- tokens counted: {run.tokens_counted} of at most {cap} for the run "
        f"({format_tokens(run.tokens_counted)} of {format_tokens(cap)}; cache reads excluded)",
        f"- cache: {run.cache_read_tokens} read, {run.cache_write_tokens} written, "
        f"{run.input_tokens} fresh input; hit {'-' if hit is None else f'{hit:.0f}%'}",
        f"- cost: {'-' if run.cost is None else f'${run.cost:.4f}'}",
        "",
        "## Loop plan",
        "",
        "```",
        *plan_lines_from_snapshot(plan),
        "```",
        "",
        *_grant_lines(run),
        *_workspace_lines(run),
    ]
    passes = list(run.passes.order_by("number"))
    gated = any(p.gate_command for p in passes)  # a coding run's until_command: one more column
    lines += [
        "## Passes",
        "",
        "| pass | verdict | judge's reason | result (as kept) | tokens | task stop | wrap-up |" + (" gate |" * gated),
        "|---|---|---|---|---|---|---|" + ("---|" * gated),
    ]
    judged = snapshots.judged_results([p for p in passes if p.snapshot_at])
    for p in passes:
        reason = _cell(p.reason or "")
        lines.append(
            f"| {p.number} | {p.verdict or '-'} | {reason or '-'} | {_kept(p, judged.get(p.pk))} | {p.tokens_counted} | "
            f"{p.task_stop or '-'} | {p.wrap_up_stop or ('-' if not p.takeover_used else 'running')} |"
            + (f" {_cell(_gate_said(p))} |" if gated else "")
        )
    return "\n".join([*lines, *_gate_lines(passes)]) + "\n"


def _gate_said(run_pass) -> str:
    if not run_pass.gate_command:
        return "-"
    return "exit 0" if run_pass.gate_status == 0 else run_pass.gate_output.partition("\n")[0]


def _gate_lines(passes) -> list[str]:
    """Each pass's until_command: its status and the end of its output (docs/coding-loops.md)."""
    ran = [p for p in passes if p.gate_command]
    if not ran:
        return []
    lines = ["", "## Test command (until_command)", ""]
    for p in ran:
        output = p.gate_output.splitlines()[1:]
        shown = output[-GATE_REPORT_LINES:]
        lines += [f"Pass {p.number}: `{p.gate_command}` — {_gate_said(p)}", "", "~~~"]
        if len(output) > len(shown):
            lines.append(f"[... {len(output) - len(shown)} lines before these ...]")
        lines += [*(line.replace("~~~", "~ ~ ~") for line in shown), "~~~", ""]
    return lines


def _workspace_lines(run) -> list[str]:
    """A coding run (docs/coding-loops.md): its working copy, whether commands were sandboxed, and its diff stat."""
    workspace = Workspace.objects.filter(run=run).first() if run.pk else None
    if workspace is None:
        return []
    version = run.recipe_version.commit_sha[:12] if run.recipe_version_id else None
    lines = [
        "## Working copy",
        "",
        f"- from {workspace.source}, `{workspace.base_ref or 'its commit'}` at {workspace.base_commit[:12]} "
        + (f"(recipe version {version})" if version else f"(recipe file {run.recipe_path})"),
        f"- branch `{workspace.branch}`; the agent worked in `{workspace.workdir}`",
        "- sandbox: "
        + (
            "bubblewrap (the copy alone writable, no network, a cleared environment)"
            if workspace.sandboxed
            else "**OFF** (RYSH_SANDBOX=off): commands ran unsandboxed, as the worker"
        ),
        f"- state: {workspace.state}"
        + (f", kept as {workspace.kept_commit[:12]} on `{workspace.kept_branch}`" if workspace.kept_commit else "")
        + (f", pushed to {workspace.pushed_to}" if workspace.pushed_to else ""),
    ]
    if workspace.carried_from_id:
        lines.append(f"- carried over from run #{workspace.carried_from.run_id}")
    lines += ["", "Diff stat (the whole run, against the commit it started from):", "", "```"]
    lines += stat_lines(workspace.stat)
    if not workspace.stat:
        lines.append("(no change)" if run.is_finished else "(no change yet)")
    return [*lines, "```", ""]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _kept(run_pass, row) -> str:
    """The result the pass's snapshot kept for the judge (`row`, its judged result), with the
    first digits of its content's hash: the report names exactly what was judged, whatever the
    folder holds later."""
    if row is None:
        return _cell(run_pass.result_file) or "-"
    digest = f" sha256 {row.blob.sha256[:12]}" if row.blob else " (not kept: too large)"
    return f"{_cell(row.name)}{digest}"


def write_report(run) -> Path | None:
    if not run.output_dir:
        return None
    folder = Path(run.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / REPORT_NAME
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".report-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(render_report(run))
    os.replace(tmp, target)
    return target
