"""Benchmark how much of its token allotment a task leg gets to use: `python -m bench.efficiency [--quick]`.

The engine's hard ceiling bounds each call's counted input by the previous call's exact context
plus the UTF-8 bytes appended since (a token never covers less than a byte). Against a provider
that packs ~4 bytes in a token, that bound overstates big appends about four times, so a leg can
stop (`tokens`) with most of its allotment unspent. This bench measures that, side by side:

- "today": `Armed.exact_counts = False`: the pure byte bound, no counting, no cutting;
- "new":   `Armed.exact_counts = True`: exact input counts near the edge (the provider's
  `count_tokens`, i.e. /v1/messages/count_tokens) and tool results cut to fit what is left.
  (Set on the Armed that `runs.wiring.arm_run` returns; an engine without the field ignores it,
  and then both sides measure today's engine: the header says which.)

Three workloads, each run once per side, on one recipe shape: `size: 15p` a pass, takeover_when
80 with a takeover_prompt (a 12,000-token task leg), a few passes under `while.budget` of 15p a
pass (60p for 4 passes), an `until:` the judge never finds met ("NO\\nnot yet"):

1. reader (browsing-like), through the real provider (`AnthropicModel`, streamed) against
   FakeAnthropic (a Messages server on loopback that counts ceil(bytes / 4) per item): every task
   turn is a short text and a `read_result` of a 20 KB page of text (a different page each turn,
   so loop detection stays out of it); it never finishes by itself, so only the budget ends the
   task leg. The wrap-up saves a result, then ends.
2. greedy: bench.engine (c)'s spender, FakeModel(adversarial=True) in process: it reports the
   byte bound of what it was sent as its input (so its count says the same) and max_tokens as
   its output: it spends all any call could. Nothing to gain from counting; nothing may be lost.
3. writer, on the fake server: every task turn is ~2 KB of text plus a `save_result` of ~6 KB
   (~2,000 output tokens a call); its context grows by what it writes, and is cached.

Per pass, from the database: the task leg's use of its allotment = sum of counted_tokens of the
pass's task steps / the leg's allotment as the engine computes it (budgets.guard.leg_left: its
share, or less when the outer total minus the wrap-up's reserve leaves less); also its share of
the full allotment, the task calls, and how the leg stopped. Overshoot: tokens counted past any
leg allotment, the outer total or the worst case (bench.engine's run_overshoot). Count calls per
step: token-count requests / model steps of non-judge legs, new side.

Throwaway environment from bench.engine.set_up() (temp data, recipes and results; removed at the
end). The last line (one line) is machine-readable:
reader_use=<new median use of the task leg's allotment> greedy_use=<the same> overshoot_tokens=<both sides, all runs>
count_calls_per_step=<new side, both workloads>
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.engine import FAKE_KEY, Environment, run_overshoot, set_up, start_run, write_recipe

PAGES = 12  # distinct pages: with 12 the same read_result appears at most twice in 20 calls
PAGE_BYTES = 20_000  # one page of text, what a browsing agent gets back per tool call
PAGES_DIR = "pages"
TAKEOVER_PROMPT = "Save what you have now."
PASS_PAGES = 15  # size: 15p
GREEDY_TEXT_BYTES = 2_000
GREEDY_SAVE_BYTES = 6_000
SIDES = (("today", False), ("new", True))

RECIPE = """\
---
loop:
  do:
    max_iterations: 60
    max_duration: 1h
    budget:
      size: {pass_pages}p
      watch:
        takeover_when: 80
        takeover_prompt: {takeover}
  while:
    max_iterations: {passes}
    budget: {total_pages}p
    prompts:
      until: {until}
---
{prompt}
"""
READER_PROMPT = (
    "Read every page in {{output_dir}}/pages with read_result (pages/page-01.txt, pages/page-02.txt, ...) "
    "and build a digest of them; keep reading until you have covered them all."
)
READER_UNTIL = "The digest covers every page in the pages folder."
GREEDY_PROMPT = "Write a long report and save every draft of it with save_result as draft.md."
GREEDY_UNTIL = "The report is complete."


# ---------------------------------------------------------------- the fake model's turns


def _text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _wrap_up_turns(messages: list[dict]) -> int | None:
    """How many assistant turns follow the takeover prompt; None before the wrap-up began.
    The engine appends the prompt as a text block of the last user turn (turns alternate)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index]["role"] == "user" and TAKEOVER_PROMPT in _text_of(messages[index]):
            return sum(1 for m in messages[index + 1 :] if m["role"] == "assistant")
    return None


def _respond(body: dict, task_turn) -> dict:
    """Route by what the request is: the judge is the only call without tools; the wrap-up is
    any call after the takeover prompt; everything else is a task turn (never a final answer,
    so only the budget ends the task leg)."""
    if not body.get("tools"):
        return {"text": "NO\nnot yet: keep going."}
    messages = body["messages"]
    wrapped = _wrap_up_turns(messages)
    if wrapped == 0:
        saved = "# Digest\n\n" + "One line of what was gathered so far.\n" * 12
        return {
            "text": "Saving what I have.",
            "tool_calls": [{"name": "save_result", "input": {"filename": "digest.md", "content": saved}}],
        }
    if wrapped is not None:
        return {"text": "Saved digest.md; stopping here."}
    return task_turn(sum(1 for m in messages if m["role"] == "assistant"))


def reader_turn(done: int) -> dict:
    page = done % PAGES + 1
    return {
        "text": f"Noted page {done}; reading the next one." if done else "Starting with the first page.",
        "tool_calls": [{"name": "read_result", "input": {"filename": f"{PAGES_DIR}/page-{page:02d}.txt"}}],
    }


def greedy_turn(done: int) -> dict:
    # the turn number in both, so no two calls are the same (loop detection) and nothing caches
    text = (f"Draft {done + 1}: thinking it through at length. " * 60)[:GREEDY_TEXT_BYTES]
    content = (f"## Section {done + 1}\n" + "A long paragraph of the report, written out in full. " * 120)[
        :GREEDY_SAVE_BYTES
    ]
    return {
        "text": text,
        "tool_calls": [{"name": "save_result", "input": {"filename": "draft.md", "content": content}}],
    }


WORKLOADS = {
    "reader": (READER_PROMPT, READER_UNTIL, reader_turn),
    "greedy": (GREEDY_PROMPT, GREEDY_UNTIL, None),  # bench.engine's spender, FakeModel(adversarial=True)
    "writer": (GREEDY_PROMPT, GREEDY_UNTIL, greedy_turn),
}


def write_pages(output_dir: Path) -> None:
    """PAGES files of PAGE_BYTES of plain text, dated an hour back: the engine seeds the next
    pass and the judge with the newest result of the run, and a page must never be that."""
    folder = output_dir / PAGES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    past = time.time() - 3600
    for n in range(1, PAGES + 1):
        line = f"Page {n}: the quick brown fox jumps over the lazy dog, and the data keeps coming.\n"
        path = folder / f"page-{n:02d}.txt"
        path.write_text((line * (PAGE_BYTES // len(line) + 1))[:PAGE_BYTES], encoding="utf-8")
        os.utime(path, (past, past))


# ---------------------------------------------------------------- one run and what it spent


@dataclass
class PassRow:
    number: int
    task_calls: int
    task_tokens: int
    allowed: int  # what the task leg could spend at the pass's start
    task_stop: str
    wrap_up_stop: str
    share: float  # task_tokens / the task leg's allotment


@dataclass
class Outcome:
    workload: str
    side: str
    flag: bool
    task_allotment: int = 0
    passes: list[PassRow] = field(default_factory=list)
    cause: str = ""
    tokens: int = 0
    outer: int = 0
    overshoot: int = 0
    model_steps: int = 0  # steps of non-judge legs
    count_calls: int = 0
    messages_calls: int = 0
    seconds: float = 0.0

    @property
    def shares(self) -> list[float]:
        """Each task leg's use of its allotment as the engine computes it (budgets.guard.leg_left):
        min(its share, what the outer total leaves once the wrap-up's share is kept back)."""
        return [p.task_tokens / p.allowed if p.allowed else 1.0 for p in self.passes]

    @property
    def median_share(self) -> float:
        return statistics.median(self.shares) if self.passes else 0.0

    @property
    def worst_share(self) -> float:
        return min(self.shares) if self.passes else 0.0

    @property
    def counts_per_step(self) -> float:
        return self.count_calls / self.model_steps if self.model_steps else 0.0


def run_once(env: Environment, workload: str, side: str, flag: bool, passes: int) -> Outcome:
    from django.conf import settings

    from agents.anthropic_model import AnthropicModel
    from runs import worker
    from runs.models import Run
    from runs.wiring import arm_run
    from tests.fakes.anthropic_server import FakeAnthropic

    prompt, until, task_turn = WORKLOADS[workload]
    text = RECIPE.format(
        pass_pages=PASS_PAGES,
        takeover=TAKEOVER_PROMPT,
        passes=passes,
        total_pages=PASS_PAGES * passes,  # redistributed evenly: exactly 15p a pass
        until=until,
        prompt=prompt,
    )
    run = start_run(write_recipe(env, f"{workload}-{side}", text))
    # labelled and priced as a Claude run, as bench.engine (a) does; the model object is ours
    Run.objects.filter(pk=run.pk).update(
        provider="anthropic", executor_model=settings.RYSH_EXECUTOR_MODEL, judge_model=settings.RYSH_JUDGE_MODEL
    )
    # read_result reads inside the run's results folder (run.output_dir, under RYSH_RESULTS_DIR)
    write_pages(Path(run.output_dir))

    def set_flag(armed):
        armed.exact_counts = flag  # before the field lands this is an unread attribute
        return armed

    out = Outcome(workload=workload, side=side, flag=flag)
    if task_turn is None:
        return run_greedy(run, out, set_flag)
    with FakeAnthropic() as fake:
        fake.responder = lambda body: _respond(body, task_turn)
        model = AnthropicModel(api_key=FAKE_KEY, base_url=fake.base_url)
        started = time.perf_counter()
        try:
            worker.execute(run.pk, lambda r: set_flag(arm_run(r, model=model)))
        finally:
            if model._client is not None:
                model._client.close()
        out.seconds = time.perf_counter() - started
        out.count_calls, out.messages_calls = count_calls(fake)
    run.refresh_from_db()
    measure(run, out)
    return out


def run_greedy(run, out: Outcome, set_flag) -> Outcome:
    """bench.engine (c)'s greedy writer: FakeModel(adversarial=True) reports the byte bound of
    what it was sent as its input (so its count_tokens says the same: nothing to gain) and
    max_tokens as its output, every call: it spends all any call could."""
    from runs import worker
    from runs.wiring import arm_run
    from tests.fake_model import FakeModel, tool

    writes = [tool("save_result", filename=f"draft-{n}.md", content="x" * 3000) for n in range(40)]
    model = FakeModel(
        task=[{"text": "working " * 30, "tools": [call]} for call in writes],
        wrap_up=[
            {"text": "landing", "tools": [tool("save_result", filename="digest.md", content="y" * 300)]},
            {"text": "Landed."},
        ],
        judge=["NO\nnot yet"] * 10,
        adversarial=True,
    )
    counts = []
    model.count_tokens = lambda request, count=model.count_tokens: counts.append(1) or count(request)
    started = time.perf_counter()
    worker.execute(run.pk, lambda r: set_flag(arm_run(r, model=model)))
    out.seconds = time.perf_counter() - started
    out.count_calls, out.messages_calls = len(counts), model.calls
    run.refresh_from_db()
    measure(run, out)
    return out


def count_calls(fake) -> tuple[int, int]:
    """(token-count requests, Messages requests). A fake that keeps counts apart records them in
    `count_requests`; an older one records every request in `requests` (and answers a count 404)."""
    requests = list(fake.requests)
    counts = len(getattr(fake, "count_requests", ()))
    counts += sum(1 for r in requests if r.path.split("?")[0].endswith("/count_tokens"))
    messages = sum(1 for r in requests if r.path.split("?")[0] == "/v1/messages")
    return counts, messages


def measure(run, out: Outcome) -> None:

    from runs.models import Pass

    plan = run.plan
    out.cause, out.tokens, out.outer = run.cause, run.tokens_counted, plan["outer_tokens"]
    task_cap = plan["split"]["task"]["tokens"]
    reserve = (plan["split"].get("raw_takeover") or {}).get("tokens", 0)
    out.task_allotment = task_cap
    overshoot, legs, _caps = run_overshoot(run)  # bench.engine's arithmetic
    out.overshoot += overshoot
    spent = {(row["run_pass__number"], row["leg"]): row for row in legs}
    for row in legs:
        if row["leg"] != "judging":
            out.model_steps += row["n"]
    before = 0  # tokens the run had counted when the pass started
    for p in Pass.objects.filter(run=run).order_by("number").values("number", "task_stop", "wrap_up_stop"):
        task = spent.get((p["number"], "task"), {"tokens": 0, "n": 0})
        # the leg's live allotment at its start (budgets.guard.leg_left): the outer total keeps
        # back the wrap-up's raw share while the task runs
        allowed = task_cap if not out.outer else max(0, min(task_cap, out.outer - before - reserve))
        out.passes.append(
            PassRow(
                number=p["number"],
                task_calls=task["n"],
                task_tokens=task["tokens"] or 0,
                allowed=allowed,
                task_stop=p["task_stop"] or "-",
                wrap_up_stop=p["wrap_up_stop"] or "-",
                share=(task["tokens"] or 0) / task_cap,
            )
        )
        before += sum((row["tokens"] or 0) for (number, _), row in spent.items() if number == p["number"])


# ---------------------------------------------------------------- report


def engine_has_flag() -> bool:
    from runs.engine import Armed

    return "exact_counts" in {f.name for f in dataclasses.fields(Armed)}


def report(outcomes: dict[tuple[str, str], Outcome], passes: int, seconds: float, has_flag: bool) -> list[str]:
    lines = [
        f"efficiency benchmark  ({os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"{'PostgreSQL' if 'DATABASE_URL' in os.environ else 'SQLite WAL'}; {seconds:.0f}s)",
        f"recipe: size {PASS_PAGES}p a pass, takeover_when 80 (task leg "
        f"{next(iter(outcomes.values())).task_allotment:,} tokens), {passes} passes, "
        f"while.budget {PASS_PAGES * passes}p, judge always NO",
        "model: AnthropicModel (streamed) against FakeAnthropic (ceil(bytes/4) an item), worker.execute in process",
        "reader: a 20 KB page (read_result) each task turn; greedy: bench.engine's FakeModel(adversarial=True), in "
        "process; writer: ~2 KB text + a ~6 KB save_result each task turn on the fake server (cached)",
        "runs.engine.Armed.exact_counts: "
        + ("present (today = False, new = True)" if has_flag else "ABSENT: both sides run today's engine"),
        "",
    ]
    for workload in WORKLOADS:
        lines.append(f"{workload}: per pass, task leg")
        lines.append(
            f"    {'side':<6}{'pass':>5}{'calls':>7}{'tokens':>9}{'share':>8}{'allowed':>9}{'of allowed':>12}"
            f"  {'task stop':<11}wrap-up stop"
        )
        for side, _ in SIDES:
            o = outcomes[(workload, side)]
            for p in o.passes:
                of_allowed = f"{p.task_tokens / p.allowed:.2f}" if p.allowed else "-"
                lines.append(
                    f"    {side:<6}{p.number:>5}{p.task_calls:>7}{p.task_tokens:>9,}{p.share:>8.2f}"
                    f"{p.allowed:>9,}{of_allowed:>12}  {p.task_stop:<11}{p.wrap_up_stop}"
                )
        lines.append("")
    head = f"    {'':<34}" + "".join(f"{w + ' ' + s:>14}" for w in WORKLOADS for s, _ in SIDES)
    lines += ["summary", head]

    def row(label: str, value) -> str:
        return f"    {label:<34}" + "".join(f"{value(outcomes[(w, s)]):>14}" for w in WORKLOADS for s, _ in SIDES)

    lines += [
        row("task-leg use of its allotment, median", lambda o: f"{o.median_share:.2f}"),
        row("task-leg use of its allotment, worst", lambda o: f"{o.worst_share:.2f}"),
        row("task calls per pass", lambda o: ",".join(str(p.task_calls) for p in o.passes)),
        row("passes run", lambda o: str(len(o.passes))),
        row("tokens counted (run)", lambda o: f"{o.tokens:,}"),
        row("Messages calls", lambda o: str(o.messages_calls)),
        row("count_tokens calls", lambda o: str(o.count_calls)),
        row("count calls per model step", lambda o: f"{o.counts_per_step:.2f}"),
        row("overshoot tokens", lambda o: str(o.overshoot)),
        row("seconds", lambda o: f"{o.seconds:.1f}"),
    ]
    lines += [f"    run ended, {w} {s}: {outcomes[(w, s)].cause}" for w in WORKLOADS for s, _ in SIDES]
    new = [outcomes[(w, "new")] for w in WORKLOADS]
    per_step = sum(o.count_calls for o in new) / max(1, sum(o.model_steps for o in new))
    overshoot = sum(o.overshoot for o in outcomes.values())
    lines += [
        "",
        f"reader_use={outcomes[('reader', 'new')].median_share:.2f} "
        f"greedy_use={outcomes[('greedy', 'new')].median_share:.2f} "
        f"overshoot_tokens={overshoot} count_calls_per_step={per_step:.2f}",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.efficiency", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 passes instead of 4")
    args = parser.parse_args(argv)
    passes = 2 if args.quick else 4

    started = time.perf_counter()
    env = set_up()
    try:
        has_flag = engine_has_flag()
        outcomes: dict[tuple[str, str], Outcome] = {}
        for workload in WORKLOADS:
            for side, flag in SIDES:
                print(f"{workload} / {side} (exact_counts={flag}): {passes} passes ...", flush=True)
                outcomes[(workload, side)] = run_once(env, workload, side, flag, passes)
        print()
        print("\n".join(report(outcomes, passes, time.perf_counter() - started, has_flag)))
    finally:
        env.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
