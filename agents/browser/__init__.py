"""The tools of a web recipe: a real Chromium, driven through Playwright, behind the tools port.

One persistent browser context per `web_profile` (agents/browser/profiles.py), so a login made
once (`manage.py web_login`) is reused by every later run; an exclusive lock file keeps two
processes from ever opening one profile at once.

Playwright's sync API runs an asyncio loop in the thread that calls it, and Django's ORM and
`async_to_sync` refuse to work in such a thread. So every Playwright call happens on one
thread this class owns; the engine's thread only submits work and waits for it.

Its parts: how Chromium starts (launch.py), what it may reach (guard.py: every
connection goes through its own egress proxy, agents/egress.py, which refuses private and
internal addresses, and hosts outside `allowed_domains`, for every request and hop), the tab the
tools act on (page.py) and the tools themselves (tools.py). Page content is data,
never instructions: whatever a page says reaches the model inside a delimited <page_content> block.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from agents.browser.errors import BrowserError, ToolError
from agents.browser.guard import RequestGuard
from agents.browser.launch import launch_options, launch_persistent, start_with_sandbox
from agents.browser.page import BrowserTab, amounts_to, keys_of, navigate_target
from agents.browser.profiles import ProfileLock, private_dir, profile_path
from agents.browser.tools import BROWSER_TOOL_NAMES, BROWSER_TOOLS, ToolCalls, text_only
from agents.ports import PageCapture, ToolResult, Tools
from agents.task_tools import ResultsTools

log = logging.getLogger(__name__)

NAVIGATION_TIMEOUT_MS = 30_000
OUTER_TIMEOUT_SECONDS = 120  # a Playwright call that outlives every inner timeout


class BrowserTools(Tools):
    """The tools port of a web recipe: the browser tools plus the results tools."""

    def __init__(
        self,
        *,
        profile: str,
        profiles_root: Path,
        output_dir: Path,
        headless: bool = True,
        web_read: str = "text",
        allowed_domains: tuple[str, ...] = (),
        executable: str | None = None,
        record_dir: Path | None = None,
        text_limit: int = 20000,
        action_timeout: float = 15,
        profile_wait: float = 0,
        private_hosts: tuple[str, ...] = (),
    ):
        self.profile = profile
        self.profiles_root = Path(profiles_root)
        self.profile_dir = profile_path(self.profiles_root, profile)
        self.results = ResultsTools(output_dir)
        self.headless = headless
        self.web_read = web_read
        self.executable = executable or None
        self.record_dir = Path(record_dir) if record_dir else None
        self.action_timeout_ms = int(action_timeout * 1000)
        self.profile_wait = profile_wait
        self.guard = RequestGuard(allowed_domains=allowed_domains, private_hosts=private_hosts)
        self.tab = BrowserTab(self.guard)  # touched on the browser's thread only
        self.calls = ToolCalls(
            tab=self.tab, guard=self.guard, results=self.results, web_read=web_read, text_limit=text_limit
        )
        self.videos: list[str] = []
        self.notes: list[str] = []  # said once in the run's events (e.g. video unavailable)
        self._lock = ProfileLock(self.profiles_root, profile)
        self._pool: ThreadPoolExecutor | None = None
        self._playwright = None
        self._opened = False

    # -- life cycle -----------------------------------------------------------------------

    @property
    def room_chars(self) -> int | None:
        """What the next model call has room for, in characters (the engine sets it)."""
        return self.results.room_chars

    @room_chars.setter
    def room_chars(self, chars: int | None) -> None:
        self.results.room_chars = chars

    def open(self, url: str | None = None, cancelled: Callable[[], bool] = lambda: False) -> None:
        """Lock the profile, start Chromium on it and open `url` (the recipe's start page, or
        the checkpointed page when a run continues)."""
        if self._opened:
            return
        self._lock.acquire(self.profile_wait, cancelled)
        try:
            private_dir(self.profile_dir)
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"browser-{self.profile}")
            self._run(self._launch)
            self._opened = True
            if url:
                result = self.call("navigate", {"url": url})
                if result.is_error:
                    raise BrowserError(f"could not open the start page: {result.content}")
            self.notes.append(
                f"browser: profile {self.profile}, {'headless' if self.headless else 'headed'}, "
                f"opened {url or 'a blank page'}"
            )
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._pool is not None:
            try:
                self._pool.submit(self._shutdown).result(timeout=OUTER_TIMEOUT_SECONDS)
            except Exception:
                log.warning("browser for profile %s did not close cleanly", self.profile, exc_info=True)
            self._pool.shutdown(wait=False)
            self._pool = None
        self._opened = False
        self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _launch(self) -> None:
        # Playwright loads only where a browser is launched: task workers never pay for it
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright

        self.guard.start()  # before Chromium: it is the browser's only way out
        self._playwright = sync_playwright().start()
        try:
            context = self.tab.context = self._start_chromium()
        except PlaywrightError as exc:
            self._playwright.stop()
            self._playwright = None
            self.guard.stop()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BrowserError(f"could not start Chromium ({self.executable or 'Playwright build'}): {first}") from None
        context.set_default_timeout(self.action_timeout_ms)
        context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
        self.guard.watch(context)
        self.tab.open_on(context)
        self.guard.watch_pages(context.pages)

    def _start_chromium(self):
        """Sandboxed where the machine allows it; else without, said in the log and the run."""
        return start_with_sandbox(lambda sandbox: self._launch_with(sandbox=sandbox), self.notes)

    def _launch_with(self, *, sandbox: bool):
        options = launch_options(
            headless=self.headless,
            executable=self.executable,
            record_dir=self.record_dir,
            sandbox=sandbox,
            allowed=self.guard.allowed,
            proxy_port=self.guard.egress.port,
        )
        return launch_persistent(self._playwright, self.profile_dir, options, self.notes)

    def _shutdown(self) -> None:
        try:
            if self.tab.context is not None:
                videos = [p.video for p in self.tab.context.pages if p.video]
                self.tab.context.close()
                for video in videos:
                    try:
                        self.videos.append(str(video.path()))
                    except Exception:  # noqa: BLE001 - a missing video must not fail the close
                        pass
        finally:
            self.tab.forget()
            if self._playwright is not None:
                self._playwright.stop()
                self._playwright = None
            self.guard.stop()

    def _run(self, fn, *args):
        if self._pool is None:
            raise BrowserError("the browser is not open")
        future = self._pool.submit(fn, *args)
        try:
            return future.result(timeout=OUTER_TIMEOUT_SECONDS)
        except FutureTimeout:
            raise ToolError(f"the browser did not answer within {OUTER_TIMEOUT_SECONDS}s") from None

    # -- the port -------------------------------------------------------------------------

    def read_previous_results(self, folder: Path) -> None:
        self.results.read_previous_results(folder)

    def specs(self) -> list[dict[str, Any]]:
        tools = BROWSER_TOOLS if self.web_read == "screenshot" else [text_only(t) for t in BROWSER_TOOLS]
        return [*tools, *self.results.specs()]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if not isinstance(arguments, dict):
            return ToolResult(f"{name}: arguments must be an object", is_error=True)
        if name not in BROWSER_TOOL_NAMES:
            return self.results.call(name, arguments)
        if not self._opened and self._pool is None:
            return ToolResult(f"{name}: the browser is not open", is_error=True)
        try:
            result = self._run(self.calls.dispatch, name, arguments)
        except ToolError as exc:
            result = ToolResult(f"{name}: {exc}", is_error=True)
        except TypeError as exc:
            result = ToolResult(f"{name}: bad arguments ({exc})", is_error=True)
        return self.guard.report(result)

    def approval_subjects(self, name: str, arguments: dict[str, Any]) -> list[str]:
        """What an `approve:` pattern is matched against: the arguments as given and, for a
        click, the element's own text — so `click:Publish*` also gates `click #publish-btn`."""
        given = [v for v in arguments.values() if isinstance(v, str)] if isinstance(arguments, dict) else []
        if name == "navigate" and self.tab.page is not None:
            try:
                given = [self._run(lambda: navigate_target(self.tab.page.url, arguments.get("url")))]
            except Exception:  # noqa: BLE001
                pass
        if name in ("click", "fill", "select") and self._pool is not None:
            try:
                given += self._run(self.tab.element_labels, arguments)
            except Exception:  # noqa: BLE001 - an element we cannot describe still has its arguments
                pass
        return [g for g in dict.fromkeys(given) if g]

    def approval_equivalents(self, name: str, arguments: dict[str, Any]) -> list[tuple[str, list[str]]]:
        """(tool, subjects) pairs an `approve:` entry is matched against: the call as itself
        first, then what it amounts to. Enter or Space on an element (pressed, or typed as a
        newline or a space) is a click on it, and Enter in a form's field a click on the form's
        submit buttons; a click or an Enter on a link opens its URL, and one that submits a
        form opens the form's action."""
        pairs = [(name, self.approval_subjects(name, arguments))]
        if not isinstance(arguments, dict) or self._pool is None:
            return pairs
        keys = keys_of(name, arguments)
        if name != "click" and not keys:
            return pairs
        target = {"selector": arguments.get("selector"), "text": arguments.get("text") if name == "click" else None}
        try:
            facts = self._run(self.tab.target_facts, target)
        except Exception:  # noqa: BLE001 - an element we cannot describe: the call as itself
            facts = None
        if not facts:
            return pairs
        return pairs + amounts_to(name, arguments, keys, facts)

    def capture(self) -> PageCapture | None:
        if self._pool is None or self.tab.page is None:
            return None
        try:
            return self._run(self.tab.capture)
        except Exception:  # noqa: BLE001 - a missing thumbnail never fails a step
            log.warning("no capture for profile %s", self.profile, exc_info=True)
            return None
