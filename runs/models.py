"""A Run is one job: passes of legs of steps. The engine writes these; views only read them."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from budgets.plan import Grant as PlanGrant
from budgets.units import format_duration, format_tokens
from runs.states import ACTIVE_STATES, Control, PauseReason, Phase, RunState  # noqa: F401 (re-exported)

# The named states live in runs.states; the models keep them importable from here for the rows.
# What keeps a second run in the same slot (runs.slots: the recipe, and for a recipe with a
# working copy its arguments) from starting: a cancelled run is parked, not active, so `resume`
# may start beside it (docs/running-loops.md). The constraint and the services share it.
BLOCKING_RUN = models.Q(state__in=["queued", "running", "awaiting approval"]) | (
    models.Q(state="paused") & ~models.Q(pause_reason=PauseReason.CANCELLED.value)
)


class Run(models.Model):
    recipe = models.ForeignKey(
        "catalogue.Recipe", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    recipe_version = models.ForeignKey(
        "catalogue.RecipeVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    # the agent package the run was made from, labelled `name@version` (docs/packages.md); "" for a recipe's
    package_version = models.ForeignKey(
        "catalogue.PackageVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    package = models.CharField(max_length=300, blank=True)
    kind = models.CharField(max_length=8)
    name = models.CharField(max_length=200)
    target = models.CharField(max_length=210, db_index=True)  # kind/name
    # what one active run holds (runs.slots): the target, or for a recipe with a working copy the
    # target and a label of its arguments and --workdir, so other arguments go side by side
    slot = models.CharField(max_length=260, default="")
    recipe_path = models.CharField(max_length=1000)
    recipe_text = models.TextField()  # the exact text the run was armed with
    args = models.JSONField(default=list)
    overrides = models.JSONField(default=dict)
    plan = models.JSONField(default=dict)  # the resolved plan, as armed
    # the merged policy the run obeys and what it did to the plan, as at its start (docs/policy.md)
    policy = models.JSONField(default=dict, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # whose user quota the run's calls count against from now on: who started it (a schedule's
    # owner), then whoever last continued or granted it by hand (an automatic continue keeps it)
    charged_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    headless = models.BooleanField(default=True)
    provider = models.CharField(max_length=20)  # anthropic | scripted
    executor_model = models.CharField(max_length=100)
    judge_model = models.CharField(max_length=100)
    output_dir = models.CharField(max_length=1000)
    script_path = models.CharField(max_length=1000, blank=True)  # the scripted provider's script

    state = models.CharField(max_length=20, choices=RunState.choices, default=RunState.QUEUED, db_index=True)
    pause_reason = models.CharField(max_length=40, blank=True)
    phase = models.CharField(max_length=10, choices=Phase.choices, blank=True)
    control = models.CharField(max_length=10, choices=Control.choices, blank=True)
    cause = models.CharField(max_length=500, blank=True)
    pass_number = models.PositiveIntegerField(default=0)
    last_verdict = models.CharField(max_length=3, blank=True)
    resumed_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="resumes")
    # a fork (docs/forks.md): the run it was forked from, and the parent's pass whose end state it
    # starts from (0: the start, a redo of pass 1); `fork_redo`: asked as "redo pass fork_pass+1";
    # `fork_edits`: what the person changed ({"prompt", "iterate_with", "until", "model", "effort",
    # "budget"}: only the keys edited, each as the new value)
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    fork_pass = models.PositiveIntegerField(null=True, blank=True)
    fork_redo = models.BooleanField(default=False)
    fork_edits = models.JSONField(default=dict, blank=True)
    # an on_success chain (docs/chains.md): the fulfilled run that started this one, and how many
    # runs of the chain came before it (0: the chain's first, or a run no chain started)
    chain_parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="chain_children"
    )
    chain_depth = models.PositiveIntegerField(default=0)
    lost_count = models.PositiveIntegerField(default=0)  # times a worker died under it

    # the job's ledger totals (counted = input + cache write + output; cache reads apart): the
    # settled calls; a call in flight is counted on its pending Step (runs.ledger)
    tokens_counted = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    seconds_used = models.FloatField(default=0)  # model-and-tool clock, against the outer clock

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True, db_index=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    # set when `prune_snapshots` dropped this run's result snapshots (RYSH_SNAPSHOT_KEEP_RUNS)
    snapshots_pruned_at = models.DateTimeField(null=True, blank=True)
    # the run's OpenTelemetry trace (rysh_site.tracing, docs/tracing.md): the W3C traceparent of
    # its root span, which every worker's spans of it hang under; empty while tracing is off
    trace_context = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "automations_run"  # named before the apps split (see migrations/0001)
        ordering = ["-created_at", "-id"]
        constraints = [
            # One active run per slot (a recipe, or a coding recipe and its arguments),
            # enforced by the database so that two people pressing Run at once cannot both
            # win. A cancelled run is parked, not active: resume may start a fresh run beside
            # it (docs/running-loops.md).
            models.UniqueConstraint(
                fields=["slot"],
                name="one_active_run_per_slot",
                condition=BLOCKING_RUN,
            ),
        ]

    def __str__(self) -> str:
        return f"run #{self.pk} {self.target}"

    def save(self, *args, **kwargs) -> None:
        if not self.slot:  # a run made without one holds its whole recipe's (runs.slots)
            self.slot = self.target
        super().save(*args, **kwargs)

    @property
    def state_label(self) -> str:
        """What the live table shows: `running pass`, `wrap-up`, `judging`, `paused(cancelled)`…"""
        if self.state == RunState.PAUSED:
            return f"paused({self.pause_reason})"
        if self.state == RunState.RUNNING:
            return {Phase.WRAP_UP: "wrap-up", Phase.JUDGING: "judging"}.get(self.phase, "running pass")
        return self.state

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def is_working(self) -> bool:
        """Queued, running or awaiting approval: a worker has it or is about to (not paused)."""
        return self.state in (RunState.QUEUED, RunState.RUNNING, RunState.AWAITING_APPROVAL)

    @property
    def is_finished(self) -> bool:
        return self.state == RunState.FINISHED

    def granted(self) -> PlanGrant:
        """Every grant this run was given, together (arming adds it to the plan)."""
        total = PlanGrant()
        for grant in self.grants.all():
            total += grant.amount
        return total

    @property
    def tokens_text(self) -> str:
        return format_tokens(self.tokens_counted)

    def results_since(self) -> float | None:
        """From when the files of its results folder are this run's (a timestamp, a second early):
        since it started, or, for a fork, since it was made (its folder then got the parent's
        results as they stood, which are the fork's own from the start: docs/forks.md)."""
        at = self.created_at if self.forked_from_id else self.started_at
        return at.timestamp() - 1 if at else None

    @property
    def duration_text(self) -> str:
        if not self.started_at:
            return "-"
        end = self.ended_at or timezone.now()
        return format_duration(int((end - self.started_at).total_seconds())) or "0s"


class PassStop(models.TextChoices):
    """Why a leg (and so a pass) ended."""

    DONE = "done"  # the model answered without asking for a tool
    STEPS = "steps"
    TIME = "time"
    TOKENS = "tokens"
    LANDED = "land now"
    CANCELLED = "cancelled"
    REFUSED = "refused"  # the model's stop reason `refusal`: the pass ends, the run says so
    ERROR = "error"


class Pass(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="passes")
    number = models.PositiveIntegerField()
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.TASK)
    task_stop = models.CharField(max_length=20, blank=True)
    wrap_up_stop = models.CharField(max_length=20, blank=True)
    takeover_used = models.BooleanField(default=False)
    verdict = models.CharField(max_length=3, blank=True)  # YES | NO
    reason = models.TextField(blank=True)
    result_file = models.CharField(max_length=1000, blank=True)
    tokens_counted = models.BigIntegerField(default=0)
    # the checkpoint, saved after every step: the current leg's counters here, the conversation
    # in Message rows (one per turn, appended: a step never writes the whole conversation)
    leg_start = models.PositiveIntegerField(default=0)  # index in messages where the leg began
    leg_steps = models.PositiveIntegerField(default=0)
    leg_tokens = models.BigIntegerField(default=0)
    leg_seconds = models.FloatField(default=0)
    steps_total = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # when the result files were kept as this pass's snapshot (PassResult rows): at the pass's
    # end, or at the run's end for a pass that never ended (an error, a stop mid-leg)
    snapshot_at = models.DateTimeField(null=True, blank=True)
    # the recipe's until_command run in the working copy once the pass's legs ended, before the
    # judge (docs/coding-loops.md, "A test command as the gate"): blank when it has not run
    gate_command = models.TextField(blank=True)
    gate_status = models.IntegerField(null=True, blank=True)  # its exit status; None: killed or not run
    gate_output = models.TextField(blank=True)  # "exit status: N" or why it was killed, then its output's tail

    class Meta:
        db_table = "automations_pass"  # named before the apps split (see migrations/0001)
        ordering = ["run", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="pass_run_number_unique")]

    def __str__(self) -> str:
        return f"{self.run} pass {self.number}"

    def save(self, *args, **kwargs) -> None:
        opening = self.__dict__.pop("_opening", None)
        if not opening:
            super().save(*args, **kwargs)
            return
        with transaction.atomic():  # the pass and its opening turns, or neither
            super().save(*args, **kwargs)
            Message.objects.bulk_create(
                [Message(run_pass=self, index=i, role=m["role"], content=m["content"]) for i, m in enumerate(opening)]
            )

    @property
    def gate_failure(self) -> str | None:
        """Why the pass's gate keeps it from counting as done ("until_command `pytest -q` exited
        1"), or None: it passed, or the pass has no gate."""
        if not self.gate_command or self.gate_status == 0:
            return None
        if self.gate_status is not None:
            said = f"exited {self.gate_status}"
        else:  # killed (a timeout, an output flood) or not run (no sandbox): its first line says which
            first = self.gate_output.partition("\n")[0] or "not run"
            said = f"did not finish ({first})"
        return f"until_command `{self.gate_command}` {said}"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation as the model was last sent it, read from its rows (the engine keeps
        it in a runs.conversation.Conversation while the pass runs)."""
        if self.pk is None:
            return list(getattr(self, "_opening", []))
        rows = self.message_rows.order_by("index").values_list("role", "content")
        return [{"role": role, "content": content} for role, content in rows]

    @messages.setter
    def messages(self, opening: list[dict[str, Any]]) -> None:
        """Only before the pass is first saved (`Pass.objects.create(..., messages=[...])`): its
        opening turns, written with it. A saved pass's conversation grows through its rows."""
        if self.pk is not None:
            raise AttributeError("a saved pass's conversation grows through runs.conversation")
        self._opening = list(opening)


class Message(models.Model):
    """One turn of a pass's conversation (Messages API role + content blocks), in order.

    Written once when the turn is appended. Two bounded edits rewrite an earlier row: the
    wrap-up prompt joins the last user turn, and a screenshot older than the newest three
    becomes a note (runs.conversation). The rows hold exactly what the model was last sent.
    """

    run_pass = models.ForeignKey(Pass, on_delete=models.CASCADE, related_name="message_rows")
    index = models.PositiveIntegerField()  # position in the conversation, from 0
    role = models.CharField(max_length=10)  # user | assistant
    content = models.JSONField()  # a list of content blocks (or a plain string)

    class Meta:
        ordering = ["run_pass", "index"]
        constraints = [models.UniqueConstraint(fields=["run_pass", "index"], name="message_pass_index_unique")]


class StepStatus(models.TextChoices):
    PENDING = "pending"  # reserved before the call; settled after it
    DONE = "done"
    LOST = "lost"  # the worker died mid-call: counted at its reservation, never less
    CANCELLED = "cancelled"  # interrupted by a cancel: counted at its reservation


class Step(models.Model):
    """One model call plus the tool calls it asked for."""

    run_pass = models.ForeignKey(Pass, on_delete=models.CASCADE, related_name="steps")
    number = models.PositiveIntegerField()  # within the pass
    leg = models.CharField(max_length=10, choices=Phase.choices)
    status = models.CharField(max_length=10, choices=StepStatus.choices, default=StepStatus.PENDING)
    model = models.CharField(max_length=100)
    max_tokens = models.PositiveIntegerField()
    reserved_tokens = models.BigIntegerField()  # input bound + max_tokens
    message_count = models.PositiveIntegerField(default=0)  # messages sent with the call
    input_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    counted_tokens = models.BigIntegerField(default=0)
    stop_reason = models.CharField(max_length=40, blank=True)
    text = models.TextField(blank=True)
    # thinking and redacted_thinking blocks in the reply (they count as output), and the
    # thinking's text, shown on the run page only when RYSH_SHOW_THINKING allows it
    thinking_blocks = models.PositiveIntegerField(default=0)
    thinking = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list)
    tool_results = models.JSONField(default=list)
    duration_ms = models.PositiveIntegerField(default=0)
    # web steps: where the browser was after the step (the continue checkpoint) and a small
    # JPEG of it for the filmstrip, a file under RYSH_SCREENSHOTS_DIR (rows stay small)
    page_url = models.CharField(max_length=2000, blank=True)
    page_title = models.CharField(max_length=300, blank=True)
    screenshot = models.CharField(max_length=300, blank=True)
    # a sub-agent's step (docs/agent-tools.md): which one ("sub-1", a nested "sub-1.2") and the
    # run's step whose sub_agent call started it; "" and None for the run's own agent
    agent = models.CharField(max_length=40, blank=True, default="")
    parent_step = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "automations_step"  # named before the apps split (see migrations/0001)
        ordering = ["run_pass", "number"]
        constraints = [models.UniqueConstraint(fields=["run_pass", "number"], name="step_pass_number_unique")]

    @property
    def thought(self) -> str:
        """What the step log says of its thinking, never the text: "thought ~N tokens"."""
        if not self.thinking_blocks:
            return ""
        if not self.thinking:  # redacted or omitted: only the blocks are known
            return f"thought ({self.thinking_blocks} block{'s' if self.thinking_blocks != 1 else ''})"
        return f"thought ~{math.ceil(len(self.thinking) / 4):,} tokens"


class RunEvent(models.Model):
    """Append-only: what happened to a run, in order. Pushed live by runs.events."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=40)
    message = models.TextField(blank=True)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "automations_runevent"  # named before the apps split (see migrations/0001)
        ordering = ["id"]


class ApprovalState(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"  # nobody answered in time: the action was not taken
    CANCELLED = "cancelled"  # the run was cancelled or lost its worker while it waited


class Approval(models.Model):
    """A tool call named in the recipe's `approve:` list, held until a person answers."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approvals")
    pass_number = models.PositiveIntegerField()
    step_number = models.PositiveIntegerField()
    tool_name = models.CharField(max_length=100)
    tool_input = models.JSONField(default=dict)
    pattern = models.CharField(max_length=300)  # the `approve:` entry that matched
    subject = models.CharField(max_length=500, blank=True)  # what it matched, e.g. the button's text
    state = models.CharField(max_length=10, choices=ApprovalState.choices, default=ApprovalState.PENDING, db_index=True)
    reason = models.TextField(blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "automations_approval"  # named before the apps split (see migrations/0001)
        ordering = ["-id"]
        constraints = [
            # a run waits for one answer at a time
            models.UniqueConstraint(
                fields=["run"], condition=models.Q(state="pending"), name="one_pending_approval_per_run"
            ),
        ]

    def __str__(self) -> str:
        return f"approval #{self.pk} of {self.run}: {self.tool_name}"

    @property
    def action_text(self) -> str:
        """`click 'Publish'`: the call as a person reads it."""
        shown = ", ".join(f"{k}={v!r}" for k, v in self.tool_input.items() if k != "content")
        return f"{self.tool_name}({shown})"

    @property
    def call_text(self) -> str:
        """The whole call, as it would be made: every argument (`content` too), none cut, one a
        line when there are several; repr shows what cannot be seen (`\\u200b`, `\\x1b`). What
        a person is asked to approve."""
        args = [f"{k}={v!r}" for k, v in self.tool_input.items()]
        if len(args) < 2:
            return f"{self.tool_name}({''.join(args)})"
        return f"{self.tool_name}(\n" + "".join(f"  {arg},\n" for arg in args) + ")"


class ResultBlob(models.Model):
    """One content of a result file, kept once under RYSH_SNAPSHOTS_DIR and named by its SHA-256:
    the same bytes saved by a hundred passes are stored once. Immutable; removed only by
    `prune_snapshots` when no PassResult points at it any more."""

    sha256 = models.CharField(max_length=64, unique=True)
    size = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"blob {self.sha256[:12]} ({self.size} bytes)"


class PassResult(models.Model):
    """A result file as it was when its pass ended: the pass's snapshot is all its rows. A later
    run overwriting the file on disk never changes them."""

    run_pass = models.ForeignKey(Pass, on_delete=models.CASCADE, related_name="results")
    name = models.CharField(max_length=1000)  # relative to the run's results folder
    # null: the file was too large to keep (RYSH_SNAPSHOT_FILE_MAX_BYTES); its name and size stay
    blob = models.ForeignKey(ResultBlob, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    size = models.BigIntegerField()
    modified_at = models.DateTimeField()  # the file's modification time when it was kept

    class Meta:
        ordering = ["run_pass", "-modified_at", "name"]
        constraints = [models.UniqueConstraint(fields=["run_pass", "name"], name="passresult_pass_name_unique")]

    def __str__(self) -> str:
        return f"{self.run_pass}: {self.name}"


class VerdictLabel(models.Model):
    """A person's word on a judged pass: was the judge right? One label per pass, the latest
    person's (each change is in the audit log)."""

    run_pass = models.OneToOneField(Pass, on_delete=models.CASCADE, related_name="label")
    judge_right = models.BooleanField()
    verdict = models.CharField(max_length=3)  # the verdict the person labelled (YES | NO)
    note = models.TextField(blank=True)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.run_pass}: judge {'right' if self.judge_right else 'wrong'}"


class RejudgeState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"


class Rejudge(models.Model):
    """A proposed judge (a new `until:` or judge model) run over a recipe's last N snapshotted
    results, on a worker, under its own small hard token budget (docs/judge-workbench.md)."""

    change_request = models.ForeignKey(
        "reviews.ChangeRequest", null=True, blank=True, on_delete=models.CASCADE, related_name="rejudges"
    )  # null: from the CLI
    target = models.CharField(max_length=210, db_index=True)  # kind/name of the recipe re-judged
    until = models.TextField()  # the goal the new judge reads
    judge_model = models.CharField(max_length=100)
    judge_effort = models.CharField(max_length=10, blank=True)  # the recipe's loop.while.effort; "" none
    provider = models.CharField(max_length=20)  # anthropic | scripted
    script_path = models.CharField(max_length=1000, blank=True)  # the scripted provider's script
    requested = models.PositiveIntegerField()  # N: the last N judged passes with a snapshot
    budget_tokens = models.BigIntegerField()  # the hard ceiling, shown before it starts
    tokens_counted = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    state = models.CharField(max_length=10, choices=RejudgeState.choices, default=RejudgeState.QUEUED)
    cause = models.CharField(max_length=500, blank=True)  # done | budget exhausted | judge error: …
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # a change request has one re-judge queued or running at a time (two presses, two
            # editors, two tabs: the database keeps only the first)
            models.UniqueConstraint(
                fields=["change_request"],
                condition=models.Q(state__in=["queued", "running"]),
                name="one_active_rejudge_per_change",
            ),
        ]

    def __str__(self) -> str:
        return f"re-judge #{self.pk} of {self.target}"


class RejudgeItem(models.Model):
    """One past pass under the proposed judge: its old verdict beside the new one."""

    rejudge = models.ForeignKey(Rejudge, on_delete=models.CASCADE, related_name="items")
    run_pass = models.ForeignKey(Pass, null=True, on_delete=models.SET_NULL, related_name="+")
    position = models.PositiveIntegerField()  # 1 = the newest pass
    result_name = models.CharField(max_length=1000, blank=True)  # the snapshot file judged
    old_verdict = models.CharField(max_length=3)
    old_reason = models.TextField(blank=True)
    new_verdict = models.CharField(max_length=3, blank=True)  # blank: not judged (budget, error)
    new_reason = models.TextField(blank=True)
    tokens_counted = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["rejudge", "position"]
        constraints = [models.UniqueConstraint(fields=["rejudge", "position"], name="rejudgeitem_position_unique")]

    @property
    def flipped(self) -> bool:
        return bool(self.new_verdict) and self.new_verdict != self.old_verdict


class LedgerEntry(models.Model):
    """The append-only token ledger: one entry per model call that can cost money."""

    # null for a re-judge's calls (rejudge is set instead): they belong to no run
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.CASCADE, related_name="ledger")
    rejudge = models.ForeignKey(Rejudge, null=True, blank=True, on_delete=models.SET_NULL, related_name="ledger")
    # One entry per step at most, so settling a step twice cannot count its tokens twice.
    step = models.OneToOneField(Step, null=True, blank=True, on_delete=models.CASCADE, related_name="ledger_entry")
    pass_number = models.PositiveIntegerField()
    purpose = models.CharField(max_length=10)  # task | wrap-up | judge | rejudge
    model = models.CharField(max_length=100)
    input_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    counted_tokens = models.BigIntegerField()  # input + cache write + output
    estimated = models.BooleanField(default=False)  # a reservation counted in full (lost/cancelled)
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)  # spend by day, quota windows
    # the person whose user quota counted the call (the run's charged_to then, or the re-judge's
    # requester): a window's recount and Spend by person read it
    charged_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        db_table = "budgets_ledgerentry"  # named before the apps split (see migrations/0001)
        ordering = ["id"]


class Grant(models.Model):
    """More passes, outer tokens or outer time an operator gave a run that ended at an outer
    ceiling; the run goes on as the same run (docs/spend.md). Kept as its history."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="grants")
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    passes = models.PositiveIntegerField(default=0)
    tokens = models.BigIntegerField(default=0)
    seconds = models.PositiveIntegerField(default=0)
    cause_before = models.CharField(max_length=500)  # how the run had ended
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"grant #{self.pk} to {self.run}: {self.describe()}"

    @property
    def amount(self) -> PlanGrant:
        return PlanGrant(self.passes, self.tokens, self.seconds)

    def describe(self) -> str:
        return self.amount.describe()


class WorkerBeat(models.Model):
    """A django-q2 cluster's sign of life, for /readyz (ops/health.py). django-q2 keeps its own
    cluster stats in the cache, which on the embedded default is each process's own memory, so
    the web process could never see them: the cluster's leader writes this row instead, from its
    guard loop, every few seconds (a quarter of RYSH_READY_WORKER_SECONDS), and deletes it when
    it stops cleanly. A killed cluster's row simply goes stale."""

    cluster = models.CharField(max_length=64, unique=True)  # django-q2's cluster id
    seen = models.DateTimeField(db_index=True)
    # whether its commands can run sandboxed (runs.wiring.sandbox_state): "ok", "unavailable" (no
    # working bubblewrap: it leaves coding runs queued), "off" (RYSH_SANDBOX=off); "" not said
    sandbox = models.CharField(max_length=12, blank=True)

    def __str__(self) -> str:
        return f"cluster {self.cluster} seen {self.seen:%Y-%m-%d %H:%M:%S}"
