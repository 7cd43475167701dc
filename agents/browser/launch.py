"""How Chromium is started for a web recipe: its options, its environment and its sandbox.

Chromium runs sandboxed where the machine allows it, else without, said in the log and in the
run's notes, never silently; it inherits nothing of the worker's secrets; and every connection
it makes goes through the egress proxy (agents/browser/guard.py, agents/egress.py).
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.browser.guard import proxy_args, resolver_rules

log = logging.getLogger(__name__)

VIEWPORT = {"width": 1024, "height": 768}  # model screenshots stay at most 1024 px wide
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # WebRTC could reach any host over UDP, past both the proxy and allowed_domains' routing
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
]
NO_SANDBOX = "--no-sandbox"
# What Chromium inherits from the worker: what a browser needs, never the worker's secrets.
BROWSER_ENV_NAMES = {
    *("PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ"),
    *("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "XAUTHORITY"),  # a headed web_login
}
BROWSER_ENV_PREFIXES = ("LC_", "FONTCONFIG")
SECRET_ENV_RE = re.compile(r"KEY|TOKEN|SECRET|PASSW|DATABASE|REDIS|CREDENTIAL|AUTH_|COOKIE|SESSION", re.IGNORECASE)


def browser_env(environ: dict[str, str] | os._Environ) -> dict[str, str]:
    """The environment Chromium starts with: locale, display, fonts, paths; no API keys,
    database or Redis URLs, whatever else the worker holds."""
    return {
        name: value
        for name, value in environ.items()
        if (name in BROWSER_ENV_NAMES or name.startswith(BROWSER_ENV_PREFIXES)) and not SECRET_ENV_RE.search(name)
    }


def sandbox_refusal(*, euid: int, userns_clone: str | None, max_user_namespaces: str | None) -> str | None:
    """Why Chromium cannot use its sandbox on this machine, or None when it can (as far as
    the kernel's settings tell: a launch that still fails falls back, see BrowserTools)."""
    if euid == 0:
        return "the worker runs as root, where Chromium refuses to start sandboxed (run workers as a normal user)"
    if (userns_clone or "").strip() == "0":
        return "the kernel forbids unprivileged user namespaces (kernel.unprivileged_userns_clone = 0)"
    if (max_user_namespaces or "").strip() == "0":
        return "the kernel allows no user namespaces (user.max_user_namespaces = 0)"
    return None


def _read_proc(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


_sandbox_failed: list[str] = []  # why a sandboxed launch failed in this process, once it has


@functools.cache
def probe_sandbox() -> str | None:
    """sandbox_refusal() for this machine: probed once per process."""
    return sandbox_refusal(
        euid=os.geteuid(),
        userns_clone=_read_proc("/proc/sys/kernel/unprivileged_userns_clone"),
        max_user_namespaces=_read_proc("/proc/sys/user/max_user_namespaces"),
    )


def sandbox_problem() -> str | None:
    """Why Chromium must run without its sandbox here (None: it runs sandboxed)."""
    return _sandbox_failed[0] if _sandbox_failed else probe_sandbox()


def without_sandbox_warning(reason: str) -> str:
    text = f"Chromium runs WITHOUT its sandbox: {reason}"
    log.warning(text)
    return text


def start_with_sandbox(launch: Callable[[bool], Any], notes: list[str]):
    """`launch(sandbox)` with the sandbox where the machine allows it; when it cannot, or
    Chromium refuses it, without — said in the log and in `notes`, never silently. A refused
    sandbox is remembered, so later launches in this process skip the attempt."""
    from playwright.sync_api import Error as PlaywrightError  # loaded with the browser, as in BrowserTools._launch

    problem = sandbox_problem()
    if problem is None:
        try:
            return launch(True)
        except PlaywrightError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            problem = f"it did not start with its sandbox ({first})"
            context = launch(False)  # raises when it was not the sandbox
            _sandbox_failed[:] = [problem]
            notes.append("security: " + without_sandbox_warning(problem))
            return context
    notes.append("security: " + without_sandbox_warning(problem))
    return launch(False)


def launch_options(
    *,
    headless: bool,
    executable: str | None,
    record_dir: Path | None = None,
    sandbox: bool | None = None,
    allowed: tuple[str, ...] = (),
    environ: dict[str, str] | None = None,
    proxy_port: int | None = None,
) -> dict:
    """Playwright's launch options. `sandbox=None` decides by the probe (and warns when it
    cannot be sandboxed); `environ` (default: the worker's) is scrubbed by browser_env();
    `proxy_port` is the egress proxy every connection goes through (web recipes' browsers)."""
    if sandbox is None:
        problem = sandbox_problem()
        if problem:
            without_sandbox_warning(problem)
        sandbox = problem is None
    args = list(CHROMIUM_ARGS) if sandbox else [NO_SANDBOX, *CHROMIUM_ARGS]
    rules = resolver_rules(allowed)
    if proxy_port is not None:
        args += proxy_args(proxy_port)
    elif rules:
        args.append(f"--host-resolver-rules={rules}")
    options: dict[str, Any] = {
        "headless": headless,
        "args": args,
        "chromium_sandbox": sandbox,  # Playwright's default (False) adds --no-sandbox itself
        "env": browser_env(os.environ if environ is None else environ),
        "viewport": dict(VIEWPORT),
        "service_workers": "block",
        "accept_downloads": False,
    }
    if executable:
        options["executable_path"] = executable
    if record_dir is not None:
        options["record_video_dir"] = str(record_dir)
        options["record_video_size"] = dict(VIEWPORT)
    return options


def launch_persistent(playwright, profile_dir: Path, options: dict, notes: list[str]):
    """Chromium on the profile folder; when video is asked for and Playwright finds no ffmpeg,
    without video (said in `notes`)."""
    from playwright.sync_api import Error as PlaywrightError  # loaded with the browser, as in BrowserTools._launch

    launch = playwright.chromium.launch_persistent_context
    try:
        return launch(str(profile_dir), **options)
    except PlaywrightError as exc:
        if "record_video_dir" not in options or "ffmpeg" not in str(exc):
            raise
    # Video needs Playwright's own ffmpeg (`playwright install ffmpeg`): run without it.
    notes.append(
        "record: true, but no video is kept: Playwright finds no ffmpeg (make installs one: scripts/ensure-chromium.sh)"
    )
    options.pop("record_video_dir")
    options.pop("record_video_size")
    return launch(str(profile_dir), **options)
