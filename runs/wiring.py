"""The one place that turns a run into an armed engine: its recipe armed from the stored text,
its model provider and its tools (a browser for web recipes, results and http for tasks, and
for a task with `workdir:` a shell in the sandbox and file tools in the run's working copy)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urljoin, urlsplit

from django.conf import settings

from agents.agent_tools import AgentTools
from agents.browser import BrowserTools
from agents.coding_tools import CodingTools
from agents.declared_tools import DeclaredTools
from agents.mcp_client import McpTools
from agents.ports import ModelPort, ToolsPort
from agents.providers import model_for
from agents.sandbox import Sandbox, SandboxConfig, sandbox_problem, server_wrap
from agents.task_tools import TaskTools
from catalogue.packages.tools import undeclared_coding_tools
from catalogue.recipe import fill_chain
from catalogue.spec import Kind, RecipeSpec
from policies.ceilings import lower_plan
from policies.rules import Merged
from runs import events
from runs.arming import arm, start_page, system_prompt
from runs.engine import Armed
from runs.models import Run, Step
from runs.states import Control, EventKind, cancel_asked, interrupted_text
from toolservers.models import ToolServer
from toolservers.services import config_of, record_listing
from workspaces.selectors import stat_lines
from workspaces.services import workspace_measure, workspace_open, workspace_pass_ended
from workspaces.setup import agent_sandbox_extras, workspace_setup


def arm_run(run: Run, model: ModelPort | None = None, tools: ToolsPort | None = None) -> Armed:
    spec, plan = arm(run.recipe_text, path=run.recipe_path, kind=run.kind, overrides=run.overrides)
    plan = plan.granted(run.granted())  # an operator's grants raise the outer ceilings (docs/spend.md)
    policy = Merged.from_json(run.policy)
    plan, _ = lower_plan(plan, policy)  # the policy's ceilings hold over any grant (docs/policy.md)
    previous = run.chain_parent.output_dir if run.chain_parent_id and run.chain_parent else ""
    spec = fill_chain(spec, results_dir=previous, run=str(run.chain_parent_id or ""))
    output_dir = Path(run.output_dir)
    if tools is None:
        if spec.kind == Kind.WEB:
            tools = web_tools(run, spec, output_dir)
        elif spec.workdir is not None:
            tools = coding_tools(run, spec, output_dir)
        else:
            tools = TaskTools(output_dir, spec.allowed_domains)
        if previous:  # read-only (docs/chains.md)
            tools.read_previous_results(Path(previous))
        if spec.mcp:
            tools = mcp_tools(run, spec, tools)
        if run.package_version_id is not None and run.package_version.info.get("type") == "agent":
            # an agent package's run: only the tools it declares (docs/packages.md)
            declared = run.package_version.info.get("tools", [])
            tools = DeclaredTools(tools, hidden=undeclared_coding_tools(declared))
            tools = agent_tools(run, spec, tools, sub_agents="sub_agent" in declared)
        else:
            tools = agent_tools(run, spec, tools)
    workdir = tools.workdir  # a coding run's folder in its copy
    return Armed(
        spec=spec,
        plan=plan,
        output_dir=output_dir,
        model=model or model_for(run),
        tools=tools,
        system=system_prompt(spec, run.output_dir, workdir=workdir),
        workdir=None if workdir is None else str(workdir),
        policy=policy,
    )


def agent_tools(run: Run, spec: RecipeSpec, inner: ToolsPort, *, sub_agents: bool = True) -> AgentTools:
    """Every run's `todo` (its plan, shown on the run page) and, for task and coding runs,
    `sub_agent` (docs/agent-tools.md; an agent package's only when it declares it); the engine
    attaches what runs a sub-agent."""

    def todo_saved(items: list[dict]) -> None:
        done = sum(1 for item in items if item["status"] == "done")
        events.record(run, EventKind.TODO, f"plan: {done} of {len(items)} done", items=items)

    return AgentTools(inner, todo_saved=todo_saved, sub_agents=sub_agents and spec.kind != Kind.WEB)


def start_url(run: Run, spec: RecipeSpec) -> str | None:
    """Where the browser opens: the page a paused run was on (continue picks up on the same
    page), else the recipe's url — a path such as /demo-site/ is on this dashboard."""
    checkpoint = (
        Step.objects.filter(run_pass__run=run)
        .exclude(page_url="")
        .order_by("-run_pass__number", "-number")
        .values_list("page_url", flat=True)
        .first()
    )
    if checkpoint and checkpoint.startswith(("http://", "https://")):
        return checkpoint
    url = start_page(spec, list(run.args), run.output_dir)  # refused at the start when it is not one
    return site_url(url) if url else None


def site_url(url: str) -> str:
    return urljoin(settings.RYSH_SITE_URL + "/", url) if url.startswith("/") else url


def browser_private_hosts() -> tuple[str, ...]:
    """The private hosts a web run's browser may reach: RYSH_BROWSER_ALLOW_PRIVATE_HOSTS, and this
    dashboard's own host:port (RYSH_SITE_URL), where the offline demo browses /demo-site/."""
    site = urlsplit(settings.RYSH_SITE_URL)
    port = site.port or (443 if site.scheme == "https" else 80)
    host = f"[{site.hostname}]" if ":" in (site.hostname or "") else site.hostname
    return (*settings.RYSH_BROWSER_ALLOW_PRIVATE_HOSTS, f"{host}:{port}")


def web_tools(run: Run, spec: RecipeSpec, output_dir: Path) -> BrowserTools:
    tools = BrowserTools(
        profile=spec.web_profile,
        profiles_root=settings.RYSH_PROFILES_DIR,
        output_dir=output_dir,
        headless=run.headless,
        web_read=spec.web_read,
        allowed_domains=spec.allowed_domains,
        executable=settings.RYSH_CHROMIUM or None,
        record_dir=Path(settings.RYSH_VIDEOS_DIR) / str(run.pk) if spec.record else None,
        text_limit=settings.RYSH_PAGE_TEXT_LIMIT,
        action_timeout=settings.RYSH_BROWSER_TIMEOUT,
        profile_wait=settings.RYSH_PROFILE_WAIT,
        private_hosts=browser_private_hosts(),
    )
    # the recipe's url is open before the first step; a continue reopens the checkpointed page
    tools.open(start_url(run, spec), cancelled=lambda: cancel_asked(run.pk))
    return tools


def sandbox_config() -> SandboxConfig:
    """The sandbox as the settings say: what it hides (the dashboard's own folder with its
    `.env` and settings, the data folder with the database, the secret key and
    other runs' copies; results; the worker's home) and its limits. What a command needs from a
    hidden folder is bound back by the caller: the run's copy, its repository's cache, the
    worker's own Python for the setup's forwarder (agents.sandbox.interpreter_binds)."""
    hidden = [
        settings.BASE_DIR,
        settings.DATA_DIR,
        settings.RYSH_RESULTS_DIR,
        settings.RYSH_SNAPSHOTS_DIR,
        settings.RYSH_WORKSPACES_DIR,
    ]
    hidden.append(settings.RYSH_CACHES_DIR)  # a run's own repository's cache is bound back in
    hidden += [Path(p) for p in settings.RYSH_SANDBOX_HIDE]
    home = Path.home()
    if home != Path("/") and home.is_dir():
        hidden.append(home)
    return SandboxConfig(
        enabled=settings.RYSH_SANDBOX == "on",
        memory_mb=settings.RYSH_SANDBOX_MEMORY_MB,
        processes=settings.RYSH_SANDBOX_PROCESSES,
        workspace_mb=settings.RYSH_WORKSPACE_MAX_MB,
        path=settings.RYSH_SANDBOX_PATH,
        hidden=tuple(dict.fromkeys(str(Path(p).resolve()) for p in hidden)),
        bwrap=settings.RYSH_SANDBOX_BWRAP,
    )


def sandbox_missing() -> str | None:
    """Why this machine cannot run a workdir run's commands sandboxed (no working bubblewrap),
    or None: it can, or an admin set RYSH_SANDBOX=off. Asked once per process (a bubblewrap
    installed since is seen once the workers restart)."""
    return sandbox_problem(sandbox_config())


def sandbox_state() -> str:
    """What a worker's heartbeat says of its sandbox (/readyz reads it): a fixed word."""
    if not sandbox_config().enabled:
        return "off"
    return "unavailable" if sandbox_missing() else "ok"


def coding_tools(run: Run, spec: RecipeSpec, output_dir: Path) -> CodingTools:
    """The run's working copy (made now on its first arming, found again on a continue) with
    the shell and file tools in it; the agent starts in the recipe's workdir."""
    config = sandbox_config()
    if config.enabled and (problem := sandbox_problem(config)):
        # a worker that cannot sandbox leaves such a run queued (runs.worker.waits_for_a_sandbox);
        # this holds should bubblewrap break between that check and the arming: no sandbox, no run
        raise RuntimeError(
            f"the sandbox cannot start on this worker ({problem}); a workdir run never runs unsandboxed "
            "unless an admin sets RYSH_SANDBOX=off"
        )
    workspace, copy = workspace_open(run=run, sandboxed=config.enabled)
    if spec.setup:  # raises SetupFailed: the worker ends the run with its cause, no model called
        workspace_setup(
            workspace=workspace,
            copy=copy,
            commands=spec.setup,
            config=config,
            cancelled=lambda: interrupted_text(run.pk),
            record=lambda message, **data: events.record(run, EventKind.SETUP, message, **data),
        )
    caches, environment = agent_sandbox_extras(workspace)  # read-only to the agent's commands
    readonly = [(copy.git_dir, copy.tree / ".git"), *caches]
    sandbox = Sandbox(copy.tree, config=config, readonly=readonly, environment=environment)
    notes = [
        "commands run in a bubblewrap sandbox: the working copy alone is writable, no network, a cleared environment"
        if config.enabled
        else "SANDBOX OFF (RYSH_SANDBOX=off): commands run as plain processes of the worker, with its "
        "network and file system; an admin chose this for the installation"
    ]

    def pass_ended(number: int) -> str:
        stat = workspace_pass_ended(workspace=workspace, pass_number=number)
        return stat_text(stat)

    return CodingTools(
        root=copy.tree,
        start=copy.tree / workspace.workdir,
        output_dir=output_dir,
        sandbox=sandbox,
        command_timeout=settings.RYSH_COMMAND_TIMEOUT,
        cancelled=lambda: interrupted_text(run.pk),  # a command in flight is killed on a cancel or a stop
        on_pass_end=pass_ended,
        on_change=lambda: workspace_measure(workspace=workspace),  # the run page's live diff
        notes=notes,
        until_command=spec.until_command,
    )


def mcp_tools(run: Run, spec: RecipeSpec, inner: ToolsPort) -> McpTools:
    """The recipe's own tools and its MCP servers' (`mcp:`), started for each pass. A server
    unregistered since the recipe was checked is left out and said."""
    servers = {s.name: s for s in ToolServer.objects.filter(name__in=[use.server for use in spec.mcp])}
    missing = [use.server for use in spec.mcp if use.server not in servers]
    wrap = mcp_sandbox_wrap()
    notes = [f"MCP server {name}: not registered (any more): its tools are not offered" for name in missing]
    for server in servers.values():
        if server.transport == "stdio" and not (server.sandboxed and wrap):
            notes.append(
                f"MCP server {server.name}: runs outside the sandbox (with the worker's network), as its admin set"
            )
    return McpTools(
        inner,
        [config_of(servers[use.server], wrap=wrap) for use in spec.mcp if use.server in servers],
        allowed={use.server: use.tools for use in spec.mcp},
        call_timeout=settings.RYSH_MCP_CALL_TIMEOUT,
        connect_timeout=settings.RYSH_MCP_CONNECT_TIMEOUT,
        result_chars=settings.RYSH_MCP_RESULT_CHARS,
        path=settings.RYSH_SANDBOX_PATH,
        # an MCP call in flight is abandoned on a cancel only: a stop is graceful, the call ends
        cancelled=lambda: interrupted_text(run.pk, by=(Control.CANCEL,)),
        on_listed=record_listing,
        notes=notes,
    )


def mcp_sandbox_wrap() -> tuple[str, ...]:
    """The bubblewrap prefix for a sandboxed stdio server, or () when the sandbox is off. The
    project folder is hidden from it as from commands; what a server needs from a hidden folder
    (its program, its interpreter, the files it names) is bound back when it starts
    (agents.sandbox.server_argv)."""
    config = sandbox_config()
    return server_wrap(config) if config.enabled else ()


def stat_text(stat: list[dict]) -> str:
    """`git diff --stat` in short: one line a file, then the totals."""
    if not stat:
        return ""
    lines = stat_lines(stat)
    added = sum(row["added"] or 0 for row in stat)
    removed = sum(row["removed"] or 0 for row in stat)
    lines.append(f"{len(stat)} file(s) changed, +{added} -{removed}")
    return "\n".join(lines)
