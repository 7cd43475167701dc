"""What each event says: one typed payload (Notice) and one builder per event.

Every channel renders the same Notice: the webhook sends `as_dict()` as JSON, Slack a
message with a link, email a subject and a body. Nothing secret goes in: a run's prompt,
its results, its recipe text and the values of a tool call waiting for approval stay in the
dashboard, behind the link.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.urls import reverse

from budgets.units import format_tokens
from catalogue.spec import NOTIFY_EVENTS
from evals.links import suite_path

TEST = "test"  # the "Send test" button's event; never subscribed to
EVENTS = (*NOTIFY_EVENTS, TEST)
EVENT_LABELS = {
    "run.ended": "a run ended",
    "approval.waiting": "an approval is waiting",
    "budget.50": "a run used 50% of its job budget",
    "budget.80": "a run used 80% of its job budget",
    "budget.95": "a run used 95% of its job budget",
    "run.paused": "a run paused (cancelled, step cap, worker lost, quota)",
    "schedule.disabled": "a schedule was disabled after failures",
    "change.opened": "a change request was opened",
    "change.approved": "a change request was approved and merged",
    "change.conflict": "a change request is in conflict",
    "eval.failed": "an eval suite had a case fail or error",
    TEST: "a test from the Notifications page",
}


TITLE_MAX = 300


def one_line(text: str, limit: int) -> str:
    """Whitespace (newlines included) collapsed to single spaces, cut to `limit` characters
    with an ellipsis: a run's cause may span lines, and a title or a mail subject may not."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Notice:
    event: str
    title: str  # one line (made so), also the email subject
    lines: tuple[str, ...]  # the details, one fact a line
    link: str  # straight to what it is about, on this dashboard
    link_label: str
    data: dict = field(default_factory=dict)  # the facts, for machines (the webhook's JSON)

    def __post_init__(self) -> None:
        object.__setattr__(self, "title", one_line(self.title, TITLE_MAX))

    def as_dict(self) -> dict:
        data = asdict(self)
        data["lines"] = list(self.lines)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Notice:
        return cls(**{**data, "lines": tuple(data.get("lines", ()))})

    @property
    def text(self) -> str:
        return "\n".join([self.title, *self.lines])


def site_link(name: str, *args, anchor: str = "") -> str:
    return f"{settings.RYSH_SITE_URL}{reverse(name, args=args)}" + (f"#{anchor}" if anchor else "")


def run_ended(run) -> Notice:
    result = run.passes.exclude(result_file="").order_by("-number").values_list("result_file", flat=True).first()
    result_name = os.path.basename(result) if result else ""
    cost = f"${run.cost:.4f}" if run.cost is not None else "not priced"
    return Notice(
        event="run.ended",
        title=f"run #{run.pk} {run.target} ended: {run.cause}",
        lines=(
            f"cause: {run.cause}",
            f"passes: {run.pass_number}",
            f"tokens: {format_tokens(run.tokens_counted)}",
            f"cost: {cost}",
            f"result: {result_name or '(none saved)'}",
        ),
        link=site_link("run_detail", run.pk),
        link_label=f"run #{run.pk}",
        data={
            "run": run.pk,
            "target": run.target,
            "cause": run.cause,
            "passes": run.pass_number,
            "tokens": run.tokens_counted,
            "cost": str(run.cost) if run.cost is not None else None,
            "result_file": result_name,
        },
    )


def approval_waiting(approval) -> Notice:
    """The tool and the names of its fields, never their values: what a `fill` would type or a
    command would run may be a password or a customer's data, and channels leave the dashboard.
    The person reads the whole call (and the `approve:` entry it matched) behind the link."""
    run = approval.run
    tool = _name_or(approval.tool_name, "(a tool)")
    fields, others = field_names(approval.tool_input)
    shown = ", ".join(fields + ([f"{others} other field{'s' if others > 1 else ''}"] if others else [])) or "(none)"
    return Notice(
        event="approval.waiting",
        title=f"run #{run.pk} {run.target} waits for approval: {tool}",
        lines=(
            f"tool: {tool}",
            f"fields: {shown} (their values are on the approval's page)",
            f"expires: {approval.expires_at:%Y-%m-%d %H:%M %Z}",
        ),
        link=site_link("run_detail", run.pk, anchor=f"approval-{approval.pk}"),
        link_label=f"approval #{approval.pk}",
        data={"run": run.pk, "target": run.target, "approval": approval.pk, "tool": tool, "fields": fields},
    )


_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,99}")
MAX_FIELDS = 12


def field_names(tool_input: object) -> tuple[list[str], int]:
    """(the input's keys that read as names, how many others). The model writes the keys too:
    one that is not a short name may be a value in disguise, and is only counted."""
    keys = [str(key) for key in tool_input] if isinstance(tool_input, dict) else []
    names = [key for key in keys if _FIELD_NAME.fullmatch(key)][:MAX_FIELDS]
    return names, len(keys) - len(names)


def _name_or(text: str, fallback: str) -> str:
    return text if _TOOL_NAME.fullmatch(text or "") else fallback


def budget(run, percent: int) -> Notice:
    total = (run.plan or {}).get("worst_tokens") or 0
    return Notice(
        event=f"budget.{percent}",
        title=f"run #{run.pk} {run.target} used {percent}% of its job budget",
        lines=(f"tokens: {format_tokens(run.tokens_counted)} of {format_tokens(total)}",),
        link=site_link("run_detail", run.pk),
        link_label=f"run #{run.pk}",
        data={"run": run.pk, "target": run.target, "percent": percent, "tokens": run.tokens_counted, "total": total},
    )


def run_paused(run, reason: str) -> Notice:
    return Notice(
        event="run.paused",
        title=f"run #{run.pk} {run.target} paused({reason})",
        lines=(f"reason: {reason}", f"pass: {run.pass_number}", f"tokens: {format_tokens(run.tokens_counted)}"),
        link=site_link("run_detail", run.pk),
        link_label=f"run #{run.pk}",
        data={"run": run.pk, "target": run.target, "reason": reason},
    )


def schedule_disabled(schedule, reason: str) -> Notice:
    return Notice(
        event="schedule.disabled",
        title=f"schedule {schedule.name} ({schedule.kind}/{schedule.recipe}) was disabled",
        lines=(
            f"reason: {reason}"[:500],
            f"enable it again with `auto {schedule.kind} schedule enable {schedule.name}`",
        ),
        link=site_link("recipe_detail", schedule.kind, schedule.recipe),
        link_label=f"{schedule.kind}/{schedule.recipe}",
        data={"schedule": schedule.name, "target": f"{schedule.kind}/{schedule.recipe}", "reason": reason[:500]},
    )


def change(event: str, change) -> Notice:
    said = {"change.opened": "opened", "change.approved": "approved and merged", "change.conflict": "in conflict"}
    lines = [f"recipe: {change.kind}/{change.new_name or change.name}", f"by: {change.author or '(unknown)'}"]
    if event == "change.conflict":
        lines.append(f"conflicts in: {', '.join(change.conflicts)}")
    return Notice(
        event=event,
        title=f"change request #{change.pk} {said[event]}: {change.title}",
        lines=tuple(lines),
        link=site_link("change_detail", change.pk),
        link_label=f"change #{change.pk}",
        data={"change": change.pk, "target": f"{change.kind}/{change.name}", "state": change.state},
    )


MAX_CASES = 20  # the failed cases a notice names; the suite's page has them all
FAILURE_CHARS = 200


def eval_failed(suite) -> Notice:
    """A suite with a failed or errored case: which cases, each with what broke it (the assertion
    and its message, or the error's cause), never the run's answer or its files' contents beyond
    what the failure message names."""
    cases = list(suite.cases.all())
    bad = [case for case in cases if case.state in ("failed", "error")]
    rows = [_case_row(case) for case in bad[:MAX_CASES]]
    lines = [f"{row['case']}: {row['state']}: {row['why']}" for row in rows]
    if len(bad) > MAX_CASES:
        lines.append(f"… and {len(bad) - MAX_CASES} more")
    where = f"change #{suite.change_request_id}" if suite.change_request_id else suite.side
    tokens = format_tokens(suite.tokens_counted)
    cost = f"${suite.cost:.4f}" if suite.cost is not None else "not priced"
    return Notice(
        event="eval.failed",
        title=f"eval suite #{suite.pk} of {suite.target} ({where}): {len(bad)} of {len(cases)} cases failed",
        lines=(*lines, f"tokens: {tokens}", f"cost: {cost}"),
        link=f"{settings.RYSH_SITE_URL}{suite_path(suite)}",
        link_label=f"suite #{suite.pk}",
        data={
            "suite": suite.pk,
            "target": suite.target,
            "side": suite.side,
            "change": suite.change_request_id,
            "cases": len(cases),
            "failed": rows,
            "tokens": suite.tokens_counted,
            "cost": str(suite.cost) if suite.cost is not None else None,
        },
    )


def _case_row(case) -> dict:
    failures = [f for f in case.failures or [] if isinstance(f, dict)]
    why = "; ".join(f"{f.get('assertion', '')}: {f.get('message', '')}" for f in failures) or case.cause
    return {
        "case": case.name,
        "state": case.state,
        "run": case.run_id,
        "assertions": [str(f.get("assertion", "")) for f in failures],
        "why": one_line(why or "(no reason recorded)", FAILURE_CHARS),
    }


def test(channel) -> Notice:
    return Notice(
        event=TEST,
        title=f"test notification for channel {channel.name}",
        lines=("If you read this, the channel works.",),
        link=site_link("delivery_list"),
        link_label="the delivery log",
        data={"channel": channel.name},
    )
