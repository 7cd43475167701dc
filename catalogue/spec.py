"""The validated, immutable shape of a recipe (docs/recipes.md).

Defaults live here, in one place; `catalogue.recipe` fills these from a file and
`budgets/plan.py` reads them. Pure: no Django, no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from budgets.plan import DEFAULT_FLOOR, Floor
from budgets.units import BOOK


class Kind(enum.StrEnum):
    """What a recipe drives: a real browser (web), no browser (task), or a working copy of the
    repository (code: rysh's coding recipes, a task anchored to a folder, docs/coding-loops.md).
    A StrEnum, so a kind compares equal to the word users type and stored rows keep the word."""

    WEB = "web"
    TASK = "task"
    CODE = "code"

    @property
    def folder(self) -> str:
        """The folder under `.rysh/automations/` that holds recipes of this kind."""
        return _FOLDER_OF[self]

    @classmethod
    def of_folder(cls, folder: str) -> Kind:
        return KINDS[folder]


_FOLDER_OF = {Kind.WEB: "webs", Kind.TASK: "tasks", Kind.CODE: "codes"}
# The same facts as lookups; a plain "web" or "webs" finds its entry too.
KINDS = {kind.folder: kind for kind in Kind}  # folder -> kind
FOLDERS = {kind: kind.folder for kind in Kind}  # kind -> folder


def _listed(words: list[str], last: str) -> str:
    """`a, b and c`: words as a sentence lists them."""
    return ", ".join(words[:-1]) + f" {last} " + words[-1]


# how messages list the kind folders: "webs/, tasks/ and codes/"
FOLDER_WORDS = _listed([f"{folder}/" for folder in KINDS], "and")

DEFAULT_INTERVAL = 50
MAX_INTERVAL = 500
DEFAULT_STEPS = 300
DEFAULT_PASS_SECONDS = 20 * 60
DEFAULT_PASS_TOKENS = 3 * BOOK
DEFAULT_TAKEOVER_WHEN = 90
DEFAULT_PASSES = 5
DEFAULT_WEB_PROFILE = "default"
# what a recipe's `notify:` may subscribe a channel to (docs/notifications.md)
NOTIFY_EVENTS = (
    "run.ended",
    "approval.waiting",
    "budget.50",
    "budget.80",
    "budget.95",
    "run.paused",
    "schedule.disabled",
    "change.opened",
    "change.approved",
    "change.conflict",
    "eval.failed",
)


@dataclass(frozen=True)
class DoSpec:
    """`loop.do` (or legacy `step`): one working session."""

    interval: int = DEFAULT_INTERVAL
    max_iterations: int = DEFAULT_STEPS
    max_duration: int = DEFAULT_PASS_SECONDS  # seconds
    auto_continue: bool = True
    budget_size: int = DEFAULT_PASS_TOKENS  # tokens
    takeover_when: int = DEFAULT_TAKEOVER_WHEN
    takeover_prompt: str | None = None
    model: str | None = None
    # the task leg's effort (wins over the recipe's top-level `effort:` for that leg); None: not set
    effort: str | None = None
    effort_line: int | None = None
    # false: every tool call of the task leg waits for a person (docs/approvals.md)
    auto_approve: bool = True
    # `budget.watch.model` / `.effort`: the wrap-up leg's own (None: the task leg's)
    watch_model: str | None = None
    watch_effort: str | None = None
    watch_effort_line: int | None = None
    # `budget.watch.floor`: the wrap-up share's floor (the built-in one when absent)
    floor: Floor = DEFAULT_FLOOR


@dataclass(frozen=True)
class WhileSpec:
    """`loop.while`: the retry envelope. None means "not set"."""

    enabled: bool | None = None  # None: on when `until` exists
    max_iterations: int = DEFAULT_PASSES
    max_duration: int | None = None  # seconds, whole loop
    budget: int | None = None  # tokens, whole loop
    until: str | None = None
    iterate_with: str | None = None
    judge_model: str | None = None  # `judge_model:` here or rysh's `model:` (which wins)
    effort: str | None = None  # the judge's effort, sent on every judge call; None: not set
    effort_line: int | None = None

    @property
    def runs_loop(self) -> bool:
        """No goal, no loop: only an `until` arms it, and `enabled: false` disarms it."""
        return bool(self.until) and self.enabled is not False


@dataclass(frozen=True)
class NotifyRule:
    """One `notify:` entry: a channel (configured in the dashboard) and the events it gets.
    `line` places the entry in the file, for the channel check that needs the database."""

    channel: str
    events: tuple[str, ...]
    line: int | None = None
    # rysh's mapping form's `to:`: this recipe's recipients instead of the channel's (email)
    to: str | None = None
    to_line: int | None = None


@dataclass(frozen=True)
class McpUse:
    """One `mcp:` entry: a registered MCP server, narrowed to some of its tools or not (None).
    `line` places the entry, for the check that needs the database (toolservers.checks)."""

    server: str
    tools: tuple[str, ...] | None = None
    line: int | None = None


@dataclass(frozen=True)
class RecipeSpec:
    path: str  # as given, for messages
    kind: Kind
    name: str
    prompt: str
    description: str = ""
    web_profile: str = DEFAULT_WEB_PROFILE
    url: str | None = None
    web_read: str = "text"  # "text" | "screenshot"
    record: bool = False
    args: tuple[str, ...] = ()
    output_dir: str = ""  # relative to the results root; default <folder>/<name>/results
    schedule: str | None = None  # None: no schedule key; "off" removes one
    do: DoSpec = field(default_factory=DoSpec)
    loop_while: WhileSpec = field(default_factory=WhileSpec)
    approve: tuple[str, ...] = ()
    approve_timeout: int | None = None  # seconds; None: RYSH_APPROVAL_TIMEOUT (30m)
    allowed_domains: tuple[str, ...] = ()
    model: str | None = None
    judge_model: str | None = None
    # docs/recipes.md: `low`, `medium` or `high`, sent as output_config.effort (with adaptive thinking)
    # to models that take it (budgets.efforts); None: not set
    effort: str | None = None
    effort_line: int | None = None  # where `effort:` sits, for the check of an unpinned model
    notify: tuple[NotifyRule, ...] = ()
    # task and code recipes (docs/coding-loops.md): where a coding agent works, a folder of the
    # recipes repository ("." its root, normalised with '/'; a code recipe without `workdir:`
    # works in "."); None: no working copy, the tools of a plain task
    workdir: str | None = None
    workdir_line: int | None = None  # where `workdir:` sits, for the checks that need the repository
    # coding loops (docs/coding-loops.md): the branch or commit the copy starts from (None: the
    # recipes branch's head), commands run once when the copy is made (the project's toolchain),
    # and a command that must exit 0 in the copy for a pass to count as done (beside the judge)
    base: str | None = None
    base_line: int | None = None
    setup: tuple[str, ...] = ()
    until_command: str | None = None
    # MCP servers the recipe may use (docs/mcp.md): their tools are `<server>__<tool>`
    mcp: tuple[McpUse, ...] = ()
    # docs/chains.md: the recipe started when a run of this one is fulfilled, as a target
    # (`task/digest`); None: no chain
    on_success: str | None = None
    on_success_line: int | None = None
    warnings: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        return FOLDERS[self.kind]

    @property
    def target(self) -> str:
        """What one active run is keyed on: `web/halilagin-medium`."""
        return f"{self.kind}/{self.name}"

    @property
    def executor_model(self) -> str | None:
        return self.do.model or self.model

    @property
    def judge(self) -> str | None:
        return self.loop_while.judge_model or self.judge_model

    @property
    def task_effort(self) -> str | None:
        """The task leg's effort: `loop.do.effort`, else the top-level `effort:`."""
        return self.do.effort or self.effort

    @property
    def wrapup_model(self) -> str | None:
        """The wrap-up leg's own model (`loop.do.budget.watch.model`), else the task leg's."""
        return self.do.watch_model or self.executor_model

    @property
    def wrapup_effort(self) -> str | None:
        return self.do.watch_effort or self.task_effort
