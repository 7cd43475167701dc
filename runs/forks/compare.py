"""Two runs of a recipe side by side (docs/forks.md): per pass, verdict, tokens, $, time, diff stat;
the final results and the final diffs compared; the prompt edits between them."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Sum

from catalogue.recipe.reader import RecipeError, split_frontmatter
from reviews.services import DiffLine, text_diff
from runs.models import LedgerEntry, Pass, PassResult, Run
from runs.results.snapshots import open_result, run_snapshot_files
from workspaces import copies
from workspaces.copies import CopyError
from workspaces.models import WorkspacePass
from workspaces.selectors import diff_text, workspace_of

TEXT_LIMIT = 200_000  # bytes of a result file read to diff it; beyond: "changed", no diff
LINEAGE_LIMIT = 100  # forks of forks followed up to the root; a cycle cannot loop forever


class CompareRefused(ValueError):
    """Two runs that cannot be compared (different recipes); the message says why."""


# -- the pure core: where each run's passes sit -------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """One line of the per-pass table. A fork numbers its passes on from its fork point (a fork
    from pass 2 runs pass 3 first), so a pass number is a position in the whole lineage and a
    fork's first pass sits beside its parent's pass fork_pass+1. `a`/`b`: whether that run ran the
    pass; `a_inherited`: it did not, it started after it (its fork point)."""

    position: int
    a: int | None
    b: int | None
    a_inherited: bool = False
    b_inherited: bool = False


def passes_aligned(a: list[int], a_start: int, b: list[int], b_start: int) -> list[Slot]:
    """Each run's pass numbers side by side; `start`: the pass a run was forked after (0: none),
    at or below which a position is inherited, shown but not its own."""
    positions = sorted(set(a) | set(b) | set(range(1, max(a_start, b_start) + 1)))
    return [
        Slot(
            position=p,
            a=p if p in a else None,
            b=p if p in b else None,
            a_inherited=p <= a_start,
            b_inherited=p <= b_start,
        )
        for p in positions
    ]


def fork_start(run: Run) -> int:
    """The pass a fork starts after (a redo of pass N: N-1); 0 for a run that is no fork."""
    return (run.fork_pass or 0) if run.forked_from_id else 0


def lineage(run: Run) -> list[Run]:
    """The run, its parent, … up to the root (forks of forks)."""
    chain, seen = [run], {run.pk}
    while chain[-1].forked_from_id and len(chain) < LINEAGE_LIMIT:
        parent = Run.objects.filter(pk=chain[-1].forked_from_id).first()
        if parent is None or parent.pk in seen:
            break
        chain.append(parent)
        seen.add(parent.pk)
    return chain


# -- what is compared ---------------------------------------------------------------------------


@dataclass
class PassFigures:
    number: int
    verdict: str
    tokens: int
    cost: Decimal | None
    seconds: float | None
    stat: list[dict] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(row.get("added") or 0 for row in self.stat)

    @property
    def removed(self) -> int:
        return sum(row.get("removed") or 0 for row in self.stat)


@dataclass
class PassRow:
    position: int
    a: PassFigures | None
    b: PassFigures | None
    a_inherited: bool = False
    b_inherited: bool = False


@dataclass
class FileCompared:
    name: str
    status: str  # same | changed | only in A | only in B
    diff: list[DiffLine] = field(default_factory=list)
    note: str = ""  # why a changed file has no text diff (binary, too large, not kept)


@dataclass
class RunDiff:
    stat: list[dict] = field(default_factory=list)
    patch: str = ""
    missing: str = ""  # why no patch (no working copy, the copy is gone)


@dataclass
class Comparison:
    a: Run
    b: Run
    a_start: int  # the pass each run was forked after (0: not a fork)
    b_start: int
    passes: list[PassRow]
    files: list[FileCompared]
    diff_a: RunDiff
    diff_b: RunDiff
    prompt_a: str
    prompt_b: str
    prompt_diff: list[DiffLine]
    settings: list[tuple[str, str, str]]  # (what, A's, B's) for the fork edits that differ

    @property
    def same_prompt(self) -> bool:
        return self.prompt_a == self.prompt_b


def runs_compare(a: Run, b: Run) -> Comparison:
    """The comparison the compare page, `auto task compare` and the API show."""
    if a.target != b.target:
        raise CompareRefused(f"run #{a.pk} is {a.target} and run #{b.pk} is {b.target}: compare runs of one recipe")
    a_start, b_start = fork_start(a), fork_start(b)
    figures_a, figures_b = pass_figures(a), pass_figures(b)
    slots = passes_aligned(list(figures_a), a_start, list(figures_b), b_start)
    rows = [
        PassRow(
            s.position,
            figures_a.get(s.a) if s.a else None,
            figures_b.get(s.b) if s.b else None,
            s.a_inherited,
            s.b_inherited,
        )
        for s in slots
    ]
    prompt_a, prompt_b = run_prompt(a), run_prompt(b)
    return Comparison(
        a=a,
        b=b,
        a_start=a_start,
        b_start=b_start,
        passes=rows,
        files=results_compared(a, b),
        diff_a=run_diff(a),
        diff_b=run_diff(b),
        prompt_a=prompt_a,
        prompt_b=prompt_b,
        prompt_diff=text_diff(prompt_a, prompt_b) if prompt_a != prompt_b else [],
        settings=settings_compared(a, b),
    )


def pass_figures(run: Run) -> dict[int, PassFigures]:
    costs = dict(
        LedgerEntry.objects.filter(run=run, cost__isnull=False)
        .values_list("pass_number")
        .annotate(total=Sum("cost"))
        .values_list("pass_number", "total")
    )
    stats = _pass_stats(run)
    figures = {}
    for p in Pass.objects.filter(run=run).order_by("number"):
        seconds = (p.ended_at - p.started_at).total_seconds() if p.ended_at and p.started_at else None
        figures[p.number] = PassFigures(
            p.number, p.verdict, p.tokens_counted, costs.get(p.number), seconds, stats.get(p.number, [])
        )
    return figures


def _pass_stats(run: Run) -> dict[int, list[dict]]:
    rows = WorkspacePass.objects.filter(workspace__run=run).values_list("pass_number", "stat")
    return dict(rows)


def edits_in_force(run: Run) -> dict:
    """The edits a run ran with: its own over its parent's, … over the root's (a fork of a fork
    keeps what its parent changed: runs.forks arms it from the parent's overrides)."""
    merged: dict = {}
    for ancestor in reversed(lineage(run)):
        merged.update({k: v for k, v in (ancestor.fork_edits or {}).items() if v is not None})
    return merged


def run_prompt(run: Run) -> str:
    """The task prompt the run ran: an edited prompt (its own or an ancestor's), else its recipe
    version's body."""
    edits = edits_in_force(run) if run.forked_from_id else {}
    if "prompt" in edits:
        return edits["prompt"]
    try:
        return split_frontmatter(run.recipe_text, run.recipe_path).body
    except RecipeError:
        return run.recipe_text


SETTINGS = ("iterate_with", "until", "model", "effort", "budget")


def settings_compared(a: Run, b: Run) -> list[tuple[str, str, str]]:
    """The fork edits other than the prompt that the two runs do not share ("as the recipe": not
    edited)."""
    edits_a, edits_b = edits_in_force(a), edits_in_force(b)
    shown = []
    for key in SETTINGS:
        va, vb = edits_a.get(key), edits_b.get(key)
        if va != vb:
            shown.append((key, va if va is not None else "as the recipe", vb if vb is not None else "as the recipe"))
    return shown


def results_compared(a: Run, b: Run) -> list[FileCompared]:
    """Each run's final results (the newest snapshot of each file) file by file."""
    files_a = {row.name: row for row in run_snapshot_files(a)}
    files_b = {row.name: row for row in run_snapshot_files(b)}
    compared = []
    for name in sorted(set(files_a) | set(files_b)):
        ra, rb = files_a.get(name), files_b.get(name)
        if rb is None:
            compared.append(FileCompared(name, "only in A"))
        elif ra is None:
            compared.append(FileCompared(name, "only in B"))
        else:
            compared.append(_file_compared(name, ra, rb))
    return compared


def _file_compared(name: str, ra: PassResult, rb: PassResult) -> FileCompared:
    if ra.blob_id and rb.blob_id:
        if ra.blob.sha256 == rb.blob.sha256:
            return FileCompared(name, "same")
    elif ra.size == rb.size and not ra.blob_id and not rb.blob_id:
        return FileCompared(name, "changed", note="too large to keep: not compared")
    text_a, why_a = _text(ra)
    text_b, why_b = _text(rb)
    if text_a is None or text_b is None:
        return FileCompared(name, "changed", note=why_a or why_b)
    return FileCompared(name, "changed", diff=text_diff(text_a, text_b))


def _text(row: PassResult) -> tuple[str | None, str]:
    if row.size > TEXT_LIMIT:
        return None, f"larger than {TEXT_LIMIT:,} bytes: no text diff"
    handle = open_result(row)
    if handle is None:
        return None, "not kept (too large, or its snapshot was pruned)"
    with handle:
        data = handle.read(TEXT_LIMIT + 1)
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "binary: no text diff"


def run_diff(run: Run) -> RunDiff:
    """The run's whole diff of its working copy: the stat as last measured and the patch while
    the copy is on disk."""
    workspace = workspace_of(run)
    if workspace is None:
        return RunDiff(missing="no working copy")
    shown = RunDiff(stat=workspace.stat)
    try:
        text = diff_text(workspace)
    except CopyError as exc:
        shown.missing = str(exc)
        return shown
    shown.patch = text[: copies.PATCH_LIMIT]
    return shown
