"""Judged passes with result snapshots, for the re-judge tests (service, view, CLI)."""

from __future__ import annotations

from pathlib import Path

from runs.models import Pass, Run, RunState, VerdictLabel
from runs.results import snapshots


def judged_run(folder: Path, passes: list[tuple[str, str]], *, kind: str = "task", name: str = "report") -> Run:
    """A finished run of kind/name whose passes (verdict, result text) each kept a snapshot of
    one result file, as the engine leaves them."""
    run = Run.objects.create(
        kind=kind,
        name=name,
        target=f"{kind}/{name}",
        recipe_path=f"{name}.md",
        recipe_text="---\n---\nx\n",
        provider="scripted",
        executor_model="scripted-demo",
        judge_model="scripted-demo",
        output_dir=str(folder),
        state=RunState.FINISHED,
        cause="unfulfilled: the 5-pass cap is reached",
    )
    for number, (verdict, text) in enumerate(passes, start=1):
        out = folder / f"run{run.pk}-pass{number}"
        out.mkdir(parents=True)
        (out / "result.md").write_text(text)
        run_pass = Pass.objects.create(
            run=run, number=number, verdict=verdict, reason=f"old reason {number}", result_file="result.md"
        )
        snapshots.snapshot_pass(run_pass, out, since=None)
    return run


def label(run: Run, number: int, *, judge_right: bool, note: str = "") -> VerdictLabel:
    run_pass = run.passes.get(number=number)
    return VerdictLabel.objects.create(run_pass=run_pass, judge_right=judge_right, verdict=run_pass.verdict, note=note)


def scripted_verdicts(fake, answers: dict[str, str]) -> None:
    """The fake server's judge answers by the marker found in the result it was sent."""

    def respond(body):
        sent = str(body.get("messages"))
        for marker, answer in answers.items():
            if marker in sent:
                return {"text": answer}
        return {"text": "NO\nunscripted result"}

    fake.responder = respond
