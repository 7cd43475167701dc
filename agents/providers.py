"""Which model a run talks to, and the ports it is armed with.

The scripted model is a separate provider, chosen explicitly (or, with no API key, for a
recipe that ships a script); the product never fakes a Claude reply.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings

from agents.models_api import unusable
from agents.ports import ModelPort

PROVIDERS = ("auto", "anthropic", "scripted")
DEFAULT_BASE_URL = "https://api.anthropic.com"


class ProviderError(ValueError):
    pass


def script_beside(recipe_path: str | Path) -> Path | None:
    """`<name>.script.yaml` beside the recipe file, if there is one."""
    path = Path(recipe_path)
    candidate = path.with_name(f"{path.stem}.script.yaml")
    return candidate if candidate.is_file() else None


def choose_provider(requested: str | None, *, target: str, script: Path | None) -> str:
    requested = requested or settings.RYSH_PROVIDER
    if requested not in PROVIDERS:
        raise ProviderError(f"unknown provider {requested!r}: expected one of {', '.join(PROVIDERS)}")
    has_key = bool(os.environ.get("ANTHROPIC_API_KEY"))
    if requested == "scripted" or (requested == "auto" and not has_key and script):
        if script is None:
            raise ProviderError(
                f"{target} has no script for the offline scripted model (a <name>.script.yaml beside the recipe)"
            )
        return "scripted"
    if not has_key:
        raise ProviderError(
            "ANTHROPIC_API_KEY is not set: set it to run on Claude"
            + (
                ", or run offline with --provider scripted"
                if script
                else "; offline, only recipes that ship a <name>.script.yaml can run (on the scripted model)"
            )
        )
    return "anthropic"


def preflight_anthropic(timeout: float = 3.0) -> None:
    """Refuse before anything is spent when the API cannot even be reached."""
    base = os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    parsed = urlparse(base)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((parsed.hostname, port), timeout=timeout).close()
    except OSError as exc:
        raise ProviderError(
            f"cannot reach the Anthropic API at {parsed.scheme}://{parsed.hostname}:"
            f"{port} ({exc.strerror or exc}); check the network or ANTHROPIC_BASE_URL"
        ) from None


def preflight_models(models: list[str]) -> None:
    """With a key: refuse before anything is spent a model the key cannot use (the Models API
    says so; when it cannot be asked, the call itself will tell)."""
    problem = unusable(models)
    if problem:
        raise ProviderError(problem)


def model_for(run) -> ModelPort:
    if run.provider == "scripted":
        from agents.scripted import ScriptedModel  # each provider loads only when a run uses it

        return ScriptedModel.from_file(run.script_path)
    from agents.anthropic_model import AnthropicModel  # the SDK loads only for Claude runs

    return AnthropicModel()
