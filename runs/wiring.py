"""The one place that turns a run into an armed engine: its recipe armed from the stored text,
its model provider and its tools (a browser for web recipes, results and http for tasks)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urljoin

from django.conf import settings

from agents.browser import BrowserTools
from agents.ports import ModelPort, ToolsPort
from agents.providers import model_for
from agents.task_tools import TaskTools
from catalogue.spec import Kind, RecipeSpec
from runs.arming import arm, system_prompt
from runs.engine import Armed
from runs.models import Control, Run, Step


def arm_run(run: Run, model: ModelPort | None = None, tools: ToolsPort | None = None) -> Armed:
    spec, plan = arm(run.recipe_text, path=run.recipe_path, kind=run.kind, overrides=run.overrides)
    plan = plan.granted(run.granted())  # an operator's grants raise the outer ceilings (SPEC §10)
    output_dir = Path(run.output_dir)
    if tools is None:
        tools = (
            web_tools(run, spec, output_dir) if spec.kind == Kind.WEB else TaskTools(output_dir, spec.allowed_domains)
        )
    return Armed(
        spec=spec,
        plan=plan,
        output_dir=output_dir,
        model=model or model_for(run),
        tools=tools,
        system=system_prompt(spec, run.output_dir),
    )


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
    return site_url(spec.url) if spec.url else None


def site_url(url: str) -> str:
    return urljoin(settings.RYSH_SITE_URL + "/", url) if url.startswith("/") else url


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
    )
    # the recipe's url is open before the first step; a continue reopens the checkpointed page
    tools.open(start_url(run, spec), cancelled=lambda: _cancel_requested(run.pk))
    return tools


def _cancel_requested(run_id: int) -> bool:
    return Run.objects.filter(pk=run_id, control=Control.CANCEL).exists()
