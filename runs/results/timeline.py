"""The pass timeline as SVG: token burn per pass against its ceiling, the wrap-up point,
and the judge's verdict. Built from numbers only; every text goes through escaping."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import mark_safe

from budgets.units import format_tokens
from runs.selectors import pass_caps, pass_leg_tokens

WIDTH, ROW, LEFT, RIGHT = 640, 34, 70, 170


def timeline_svg(run, passes) -> str:
    task_cap, wrap_cap = pass_caps(run.plan or {})
    scale_max = max(task_cap + wrap_cap, 1)
    usable = WIDTH - LEFT - RIGHT
    x = lambda tokens: LEFT + usable * min(tokens, scale_max) / scale_max  # noqa: E731
    totals = pass_leg_tokens(passes)
    rows = [
        f'<svg class="timeline" viewBox="0 0 {WIDTH} {max(1, len(passes)) * ROW + 24}" '
        f'role="img" aria-label="token burn per pass" xmlns="http://www.w3.org/2000/svg">'
    ]
    if task_cap and wrap_cap:
        mark = x(task_cap)
        rows.append(f'<line class="mark" x1="{mark:.1f}" x2="{mark:.1f}" y1="0" y2="{len(passes) * ROW + 4}"/>')
        rows.append(
            f'<text class="mark-label" x="{mark:.1f}" y="{len(passes) * ROW + 18}">'
            f"wrap-up at {escape(format_tokens(task_cap))}</text>"
        )
    for i, p in enumerate(passes):
        y = i * ROW + 6
        task, wrap = totals.get((p.pk, "task"), 0), totals.get((p.pk, "wrap-up"), 0)
        judge = totals.get((p.pk, "judging"), 0)
        rows.append(f'<text class="pass-label" x="4" y="{y + 15}">pass {p.number}</text>')
        rows.append(f'<rect class="cap" x="{LEFT}" y="{y}" width="{x(scale_max) - LEFT:.1f}" height="20"/>')
        if wrap_cap:
            rows.append(
                f'<rect class="wrap-share" x="{x(task_cap):.1f}" y="{y}" '
                f'width="{x(scale_max) - x(task_cap):.1f}" height="20"/>'
            )
        rows.append(
            f'<rect class="burn-task" x="{LEFT}" y="{y + 3}" width="{x(task) - LEFT:.1f}" height="14">'
            f"<title>task leg: {task} tokens</title></rect>"
        )
        if wrap:
            rows.append(
                f'<rect class="burn-wrap" x="{x(task):.1f}" y="{y + 3}" '
                f'width="{x(task + wrap) - x(task):.1f}" height="14"><title>wrap-up leg: {wrap} tokens</title></rect>'
            )
        verdict = p.verdict or ("…" if p.ended_at is None else "-")
        reason = escape(p.reason or "")
        rows.append(
            f'<text class="verdict verdict-{escape(verdict.lower())}" x="{WIDTH - RIGHT + 8}" y="{y + 15}">'
            f"{escape(verdict)} · {escape(format_tokens(task + wrap + judge))}"
            f"<title>{reason or 'not judged yet'}</title></text>"
        )
    rows.append("</svg>")
    return mark_safe("".join(rows))
