"""A fulfilled run starts the recipe its `on_success` names (docs/chains.md).

Heard from the engine's `run_finished` (runs.receivers), after the run's end is committed: the
next run is started as any start is (runs.services.run_start: armed from the catalogue's last
good version, refused with a clear message), by the person who started the first and on the
same provider, with the finished run as its `chain_parent`, so its prompts may name the first
run's results (`{{previous_results_dir}}`, `{{previous_run}}`) and its results tools may read
them. A cancel, a stop, an error or a budget's end never chains, nor does a fork or an eval
case's run; a chain deeper than 8 (a recipe
changed since its check) is refused with an event on the run that would have started it."""

from __future__ import annotations

import logging

from catalogue.chains import MAX_DEPTH
from catalogue.recipe import RecipeError, parse_recipe
from runs import events
from runs.chains import CHAINING_CAUSES
from runs.models import Run, RunState
from runs.services import EVAL_SLOT, RunRefused, run_start
from runs.states import EventKind

log = logging.getLogger(__name__)


def run_chain_follow(*, run_id: int) -> Run | None:
    """Start the next recipe of a finished run's chain, once; None when nothing starts."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None or run.state != RunState.FINISHED or run.cause not in CHAINING_CAUSES:
        return None
    if run.forked_from_id or run.slot.startswith(EVAL_SLOT):  # an experiment or a test case: never
        return None
    try:  # the recipe as this run was armed with it: what it said when it started is what chains
        target = parse_recipe(run.recipe_text, path=run.recipe_path, kind=run.kind).on_success
    except RecipeError:
        return None
    if target is None or run.chain_children.exists():  # no chain, or already followed
        return None
    depth = run.chain_depth + 1
    if depth > MAX_DEPTH:
        events.record(
            run,
            EventKind.NOTE,
            f"on_success: {target} not started: the chain is already {MAX_DEPTH} links deep (at most "
            f"{MAX_DEPTH}; docs/chains.md)",
        )
        return None
    kind, _, name = target.partition("/")
    try:
        following = run_start(
            kind=kind,
            name_or_path=name,
            args=[],
            user=run.charged_to or run.user,
            provider=run.provider,
            catalogue_only=True,
            chain_parent=run,
        )
    except RunRefused as exc:
        events.record(run, EventKind.NOTE, f"on_success: {target} not started: {exc}")
        return None
    events.record(run, EventKind.NOTE, f"chained: {following.target} #{following.pk} started (on_success)")
    return following
