"""People's word on the judge (docs/judge-workbench.md): a label per judged pass, "judge right" or "judge
wrong" with an optional note, and how often the judge agrees with people, per judge model and
per `until:` version.

Writes are services (`verdict_label_set`, `verdict_label_clear`), each written to the audit log
on the run; reads are selectors. The `until:` a run was judged against is read from the exact
text it was armed with (Run.recipe_text), not from today's recipe: an edited goal is a new
version, and the judge's record under the old one stays apart.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.db.models import Max, Min
from django.urls import reverse

from audit.services import audit_record
from catalogue.recipe import RecipeError, parse_recipe
from runs import events
from runs.models import Pass, Run, VerdictLabel

NOTE_MAX = 2000
VERDICTS = ("YES", "NO")
UNREADABLE = "(unreadable)"  # the armed text no longer parses with today's reader
NO_GOAL = "(no until:)"


class LabelRefused(Exception):
    """A label that cannot be set: the pass has no verdict to judge."""


# -- services ---------------------------------------------------------------------------------


def verdict_label_set(*, run_pass: Pass, judge_right: bool, note: str, user) -> VerdictLabel:
    """Say whether the judge was right on this pass. One label per pass: the latest person's
    replaces the one before, and both are in the audit log."""
    if run_pass.verdict not in VERDICTS:
        raise LabelRefused(
            f"pass {run_pass.number} of run #{run_pass.run_id} has no verdict: there is nothing to label"
        )
    note = (note or "").strip()[:NOTE_MAX]
    with transaction.atomic():
        before = VerdictLabel.objects.filter(run_pass=run_pass).first()
        # the OneToOne is unique: two people at once both land, the later one wins
        label, _ = VerdictLabel.objects.update_or_create(
            run_pass=run_pass,
            defaults={"judge_right": judge_right, "verdict": run_pass.verdict, "note": note, "by": user},
        )
        detail = {"pass": run_pass.number, "judge": _word(judge_right), "verdict": run_pass.verdict, "note": note}
        if before is not None:
            detail["was"] = {"judge": _word(before.judge_right), "note": before.note}
        audit_record(actor=user, action="verdict.label", target=run_pass.run, detail=detail)
        _push_on_commit(run_pass.run_id)
    return label


def verdict_label_clear(*, run_pass: Pass, user) -> bool:
    """Take a pass's label away (False when it had none)."""
    with transaction.atomic():
        before = VerdictLabel.objects.filter(run_pass=run_pass).first()
        if before is None:
            return False
        before.delete()
        detail = {"pass": run_pass.number, "was": {"judge": _word(before.judge_right), "note": before.note}}
        audit_record(actor=user, action="verdict.unlabel", target=run_pass.run, detail=detail)
        _push_on_commit(run_pass.run_id)
    return True


def _word(judge_right: bool) -> str:
    return "right" if judge_right else "wrong"


def _push_on_commit(run_id: int) -> None:
    """Other open run pages show the label at once: this process's live hub hears the push (a
    label writes no RunEvent, so other web processes' tails show it with the run's next change)."""
    transaction.on_commit(lambda: events.push(run_id, None, "label"))


# -- selectors --------------------------------------------------------------------------------


def run_passes_labelled(run: Run) -> list[Pass]:
    """A run's passes, oldest first, each with its label (`p.label`, and who set it) in one query."""
    return list(Pass.objects.filter(run=run).select_related("label__by").order_by("number"))


@dataclass
class AgreementRow:
    """The judge's record against people for one judge model under one `until:` version."""

    judge_model: str
    until: str
    first_seen: datetime
    last_seen: datetime
    agreed: int = 0
    disagreed: int = 0
    disagreed_links: list[tuple[str, str]] = field(default_factory=list)  # (url, "#run pass n")

    @property
    def labelled(self) -> int:
        return self.agreed + self.disagreed

    @property
    def percent(self) -> int:
        return round(100 * self.agreed / self.labelled) if self.labelled else 0


def judge_agreement(*, kind: str, name: str) -> list[AgreementRow]:
    """Labelled passes of a recipe's runs, grouped by judge model and `until:` version; newest
    version first (by the last run armed with it), then by judge model."""
    runs = Run.objects.filter(kind=kind, name=name)
    labels = list(
        VerdictLabel.objects.filter(run_pass__run__in=runs)
        .select_related("run_pass")
        .order_by("run_pass__run_id", "run_pass__number")
    )
    if not labels:
        return []
    seen = _versions_seen(runs, kind)
    armed = {
        r["pk"]: (r["judge_model"], until_of(r["recipe_text"], r["recipe_path"], kind))
        for r in Run.objects.filter(pk__in={label.run_pass.run_id for label in labels}).values(
            "pk", "judge_model", "recipe_text", "recipe_path"
        )
    }
    rows: dict[tuple[str, str], AgreementRow] = {}
    for label in labels:
        key = armed[label.run_pass.run_id]
        if key not in rows:
            rows[key] = AgreementRow(*key, *seen[key[1]])
        _count(rows[key], label)
    return sorted(rows.values(), key=lambda r: (-r.last_seen.timestamp(), r.judge_model))


def _count(row: AgreementRow, label: VerdictLabel) -> None:
    if label.judge_right:
        row.agreed += 1
        return
    row.disagreed += 1
    run_id, number = label.run_pass.run_id, label.run_pass.number
    row.disagreed_links.append((reverse("run_detail", args=[run_id]) + f"#pass-{number}", f"#{run_id} pass {number}"))


def _versions_seen(runs, kind: str) -> dict[str, tuple[datetime, datetime]]:
    """Each `until:` version's first and last run, over all the recipe's runs: the database
    groups the runs by armed text (few distinct ones) and the reader reads each text once."""
    seen: dict[str, tuple[datetime, datetime]] = {}
    texts = (
        runs.order_by().values("recipe_text", "recipe_path").annotate(first=Min("created_at"), last=Max("created_at"))
    )
    for t in texts:
        until = until_of(t["recipe_text"], t["recipe_path"], kind)
        first, last = seen.get(until, (t["first"], t["last"]))
        seen[until] = (min(first, t["first"]), max(last, t["last"]))
    return seen


_UNTILS: dict[tuple[str, str, str], str] = {}  # (sha-256 of the armed text, path, kind) -> its until
UNTILS_KEPT = 1024


def until_of(text: str, path: str, kind: str) -> str:
    """The `until:` goal in a run's armed text. The same text always gives the same answer, so
    each is read once per process; kept by the text's hash, not the text (up to 256 KB each)."""
    key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), path, kind)
    until = _UNTILS.get(key)
    if until is None:
        if len(_UNTILS) >= UNTILS_KEPT:
            _UNTILS.clear()  # crude, and enough: a recipe page reads a handful of texts
        until = _UNTILS[key] = _read_until(text, path, kind)
    return until


def _read_until(text: str, path: str, kind: str) -> str:
    try:
        spec = parse_recipe(text, path=path, kind=kind)
    except RecipeError:  # a text today's reader refuses (it changed since the run was armed)
        return UNREADABLE
    return (spec.loop_while.until or "").strip() or NO_GOAL
