"""`python manage.py web_login PROFILE [URL]` — log in once, by hand, in a headed browser.

Opens Chromium on the profile a web recipe names (`web_profile:`); you log in to the site as
usual and close the window. Later runs, headless, reuse that login: its cookies stay in the
profile folder under the data directory (mode 0700) and never leave it.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agents.browser.errors import BrowserError
from agents.browser.launch import launch_options, start_with_sandbox
from agents.browser.profiles import ProfileLock, private_dir, profile_path


class Command(BaseCommand):
    help = "Open a headed browser on a web profile so you can log in once; later headless runs reuse it."

    def add_arguments(self, parser):
        parser.add_argument("profile", help="the profile name, as in a recipe's web_profile:")
        parser.add_argument("url", nargs="?", default="about:blank", help="the page to open (the site's login page)")
        parser.add_argument(
            "--timeout",
            type=float,
            default=0,
            help="close the browser after this many seconds (0: when you close the window)",
        )
        parser.add_argument(
            "--headless", action="store_true", help="no window (for scripts and tests: e.g. a URL that sets a cookie)"
        )

    def handle(self, *args, profile, url, timeout, headless, **options):
        from playwright.sync_api import Error as PlaywrightError  # only when a login runs
        from playwright.sync_api import sync_playwright

        root = settings.RYSH_PROFILES_DIR
        try:
            folder = profile_path(root, profile)
            lock = ProfileLock(root, profile)
            lock.acquire(0)
        except BrowserError as exc:
            raise CommandError(str(exc)) from None
        try:
            private_dir(folder)
            with sync_playwright() as playwright:
                notes: list[str] = []
                executable = settings.RYSH_CHROMIUM or None
                try:
                    context = start_with_sandbox(
                        lambda sandbox: playwright.chromium.launch_persistent_context(
                            str(folder), **launch_options(headless=headless, executable=executable, sandbox=sandbox)
                        ),
                        notes,
                    )
                except PlaywrightError as exc:
                    hint = (
                        "" if headless else " (a headed browser needs a display: run this where you can see a window)"
                    )
                    raise CommandError(f"could not start Chromium: {str(exc).splitlines()[0]}{hint}") from None
                for note in notes:
                    self.stderr.write(note)
                page = context.pages[0] if context.pages else context.new_page()
                if url != "about:blank":
                    page.goto(url)
                self.stdout.write(f"profile {profile!r} is open at {url} ({folder}).")
                self.stdout.write(
                    "Log in, then close the browser window" + (f" (or wait {timeout:g}s)" if timeout else "") + "."
                )
                self._wait(context, timeout)
                context.close()
        finally:
            lock.release()
        self.stdout.write(f"saved: runs with web_profile: {profile} now start logged in.")

    def _wait(self, context, timeout: float) -> None:
        closed = []
        context.on("close", lambda *_: closed.append(True))
        deadline = time.monotonic() + timeout if timeout else None
        while not closed and all(not p.is_closed() for p in context.pages[:1]) and context.pages:
            if deadline and time.monotonic() >= deadline:
                return
            context.pages[0].wait_for_timeout(250)
