"""A run's states with names (docs/running-loops.md): what it is doing (RunState, Phase), why it
paused (PauseReason), what people asked of it (Control), what its events say (EventKind), which
controls apply to it now (allowed_controls) and why its work must stop now (interruption).

The values are the words stored in rows and events since the first release, so old rows keep
their meaning. Pages, the API and the services' guards ask `allowed_controls`; the model call,
the tools, the approval wait, the sandbox and the browser ask `interruption`.
"""

from __future__ import annotations

from django.apps import apps  # the Run by name: runs.models imports this module
from django.db import models

from budgets.plan import is_grantable


class RunState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"  # see PauseReason
    AWAITING_APPROVAL = "awaiting approval"
    FINISHED = "finished"


class Phase(models.TextChoices):
    TASK = "task"
    WRAP_UP = "wrap-up"
    JUDGING = "judging"


class Control(models.TextChoices):
    """A request from a person, written on the Run and read by the engine between steps."""

    NONE = ""
    STOP = "stop"
    CANCEL = "cancel"
    LAND = "land"


class PauseReason(models.TextChoices):
    """Why a paused run waits (`paused(<reason>)` on the pages). A quota pause names its quota:
    `quota: installation`, `quota: recipe`, `quota: user` (spend.models.Quota.pause_reason)."""

    CANCELLED = "cancelled"  # a person cancelled it: parked, not active; resume may start beside it
    STEP_CAP = "step cap"  # a leg reached its step cap: continue gives it its allotment afresh
    WORKER_LOST = "worker lost"  # its worker went away: the sweeper re-queues or pauses it

    @staticmethod
    def is_quota(reason: str) -> bool:
        return reason.startswith(QUOTA_PREFIX)

    @classmethod
    def is_known(cls, reason: str) -> bool:
        return reason in cls.values or cls.is_quota(reason)


QUOTA_PREFIX = "quota:"  # every quota pause reason starts so (spend.quotas.QUOTA_PAUSE)


class EventKind(models.TextChoices):
    """What a RunEvent records (runs.events.record), in the run's own order of things."""

    QUEUED = "queued"
    REQUEUED = "requeued"  # no task for it was left in the queue: queued again
    WAITING = "waiting"  # a workdir run waits for a worker that can sandbox
    RUNNING = "running"
    SETUP = "setup"  # the recipe's setup commands in its working copy
    PASS_STARTED = "pass.started"
    STEP = "step"
    GATE = "gate"  # a coding loop's gate command ran
    WRAP_UP = "wrap-up"  # the wrap-up prompt took the wheel
    JUDGING = "judging"
    VERDICT = "verdict"
    PASS_ENDED = "pass.ended"
    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_ANSWERED = "approval.answered"
    APPROVAL_STALE = "approval.stale"
    CONTROL = "control"  # a person asked stop, cancel or land now
    PAUSED = "paused"
    CONTINUED = "continued"
    GRANTED = "granted"
    FINISHED = "finished"
    VIDEO = "video"  # a web run's video was saved
    NOTE = "note"
    TODO = "todo"  # the agent's plan as its todo tool last wrote it (docs/agent-tools.md)
    SUB_AGENT = "sub-agent"  # a sub-agent started or ended


ACTIVE_STATES = (RunState.QUEUED, RunState.RUNNING, RunState.PAUSED, RunState.AWAITING_APPROVAL)
WORKING_STATES = (RunState.RUNNING, RunState.AWAITING_APPROVAL)


def allowed_controls(run) -> list[str]:
    """Which controls apply to a run right now (docs/running-loops.md), in the order they are
    shown. The pages, the API and the services' guards all ask this."""
    if run.state == RunState.QUEUED:
        return ["stop", "cancel"]
    if run.state in WORKING_STATES:
        return [*(["land"] if can_land(run) else []), "stop", "cancel"]
    if run.state == RunState.PAUSED:
        return ["continue", "stop"] + (["resume"] if run.pause_reason == PauseReason.CANCELLED else [])
    return (["grant"] if is_grantable(run.cause) else []) + ["resume"]  # docs/spend.md


def can_land(run) -> bool:
    """Land now ends a running task leg at once: the wrap-up prompt takes the wheel (a recipe
    without a wrap-up goes to its judge). One request at a time."""
    return run.state == RunState.RUNNING and run.phase == Phase.TASK and not run.control


# What an interruption says where work was cut short (a command killed, a call abandoned).
INTERRUPTED = {Control.CANCEL: "the run was cancelled", Control.STOP: "the run was asked to stop"}


def interruption(run) -> Control | None:
    """Why the run's work must stop or turn now: the control a person asked (cancel, stop or
    land now), read fresh from the database, or None. `run` is a Run or its id. Each reader
    decides which ones cut it short: a model call or the browser only a cancel, a command or an
    approval wait a cancel or a stop."""
    pk = getattr(run, "pk", run)
    control = apps.get_model("runs", "Run").objects.filter(pk=pk).values_list("control", flat=True).first() or ""
    return Control(control) if control else None


def cancel_asked(run) -> bool:
    """A cancel was asked: what a model call in flight or the browser's first page abandons on."""
    return interruption(run) == Control.CANCEL


def interrupted_text(run, *, by: tuple[Control, ...] = (Control.CANCEL, Control.STOP)) -> str | None:
    """What to say when one of `by` was asked (`the run was cancelled`…), or None."""
    asked = interruption(run)
    return INTERRUPTED[asked] if asked in by else None
