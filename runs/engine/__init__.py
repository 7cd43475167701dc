"""The engine (docs/running-loops.md): the do/while loop as small stages over one context.

The rooms, in the order a run id walks them from the worker's entry (docs/layout.md):

- context.py    what every stage shares: Armed (the armed job), StepContext (the step in hand),
                Paused (how a worker lets go of a paused run)
- stages.py     the loop: start pass -> task leg -> wrap-up leg -> judge -> next pass | end
- passes.py     the pass in hand: start (first, resumed, seeded), wrap-up, end, snapshot
- controls.py   stop / cancel / land now read from the Run, and approval gates
- call.py       a step: bound, exact count, quota fit, reservation, call, tools, settle
- quota.py      the team's spend quotas: a call's room, and the wait when there is none
- tools.py      the tools port called: loop detection, approval holds, a web capture
- result_room.py  a step's tool results fitted to the room the leg has left (ResultFitter)
- fitting.py    the pure arithmetic behind it: what an exact count allows, results cut to fit
- judge.py / verdicts.py        the judge's call; its prompt and the verdict's parsing
- outcome.py    how a run leaves the worker: paused or finished, in one place
"""

from runs.engine.context import Armed
from runs.engine.controls import CONTROL_POLL_SECONDS
from runs.engine.outcome import finish_run, pause_run
from runs.engine.stages import Engine

__all__ = ["CONTROL_POLL_SECONDS", "Armed", "Engine", "finish_run", "pause_run"]
