"""Take the manual's screenshots (docs/screenshots/) from a real, throwaway rysh (daphne + qcluster + Chromium).

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots] [--keep]

Same setup as the end-to-end tests (tests/e2e/stack.py): a temp data folder, migrate,
seed_demo, the offline demo recipe run on the scripted model. Every picture is 1280 px wide.
Runs: one fulfilled and one stopped for the history, then one watched live from the browser.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.e2e.stack import Stack, launch_chromium, login  # noqa: E402

WIDTH = 1280
MAX_BYTES = 400 * 1024
RECIPE = "/recipes/task/reading-list/"


def shoot(page, out: Path, name: str, *, until: str = "main", max_height: int = 2400) -> Path:
    """The page from the top down to the bottom of `until` (plus a margin), at most max_height."""
    path = out / f"{name}.png"
    bottom = page.evaluate(
        "(sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return r.bottom + window.scrollY; }",
        until,
    )
    height = int(min(bottom + 24, max_height, page.evaluate("document.documentElement.scrollHeight")))
    page.screenshot(path=str(path), full_page=True, clip={"x": 0, "y": 0, "width": WIDTH, "height": height})
    size = path.stat().st_size
    print(f"  {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  {size // 1024} KB")
    if size > MAX_BYTES:
        print(f"  warning: {path.name} is over {MAX_BYTES // 1024} KB")
    return path


def steps_shown(page) -> int:
    return page.evaluate("document.querySelectorAll('#run-steps details.step').length")


def coding_shots(stack, browser, out: Path, logins: dict[str, str]) -> None:
    """The offline coding demo finished: its Changes section as an editor sees it, and its diff."""
    pk = stack.run("fix-the-test")
    stack.wait_run(pk, lambda r: r["state"] == "finished", timeout=90)
    page = browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()
    login(page, stack.url, "reviewer", logins["reviewer"])
    page.goto(f"{stack.url}/runs/{pk}/")
    page.locator("#run-changes").scroll_into_view_if_needed()
    shoot(page, out, "coding-run", until="#run-changes", max_height=2400)
    page.goto(f"{stack.url}/runs/{pk}/changes/")
    shoot(page, out, "coding-diff", max_height=1200)


def evals_shot(stack, browser, out: Path, logins: dict[str, str]) -> None:
    """The Evals panel of the demo's change request (seed_demo opens it): the admin runs the
    suites on main and on the change, on the scripted model; main fails keeps-to-the-tests."""
    page = browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()
    page.set_default_timeout(30_000)
    login(page, stack.url, "demo", logins["demo"])
    page.goto(stack.url + "/changes/")
    page.click("text=Eval case keeps-to-the-tests")
    page.wait_for_url(re.compile(r"/changes/\d+/$"))
    page.click("#evals-run button[type=submit]")
    page.wait_for_url(re.compile(r"/changes/\d+/#evals$"))
    page.wait_for_selector("#evals .evals-totals", timeout=30_000)
    page.wait_for_function("() => !document.querySelector('#evals-running')", timeout=180_000)
    page.wait_for_timeout(300)
    page.evaluate("document.querySelector('#evals').scrollIntoView()")
    shoot(page, out, "evals-panel", until="#evals", max_height=2400)


def packages_shot(stack, browser, out: Path, logins: dict[str, str]) -> None:
    """The demo's test-fixer agent package after a run of it (offline, on its script): its page
    with the manifest's facts, the tools it declares and its recent runs."""
    stack.manage("auto", "agent", "run", "test-fixer", "make tiny-calc's tests pass", "--wait", timeout=120)
    page = browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()
    login(page, stack.url, "demo", logins["demo"])
    page.goto(stack.url + "/packages/test-fixer/")
    shoot(page, out, "package", max_height=1800)


def fork_shot(stack, browser, out: Path, logins: dict[str, str]) -> None:
    """The compare page of a fork and its parent (docs/forks.md): the offline coding demo run,
    then a redo of its pass 1 with an edited prompt, started from the fork form."""
    pk = stack.run("fix-the-test")
    stack.wait_run(pk, lambda r: r["state"] == "finished", timeout=90)
    page = browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()
    page.set_default_timeout(30_000)
    login(page, stack.url, "demo", logins["demo"])
    page.goto(f"{stack.url}/runs/{pk}/fork/?pass=1&redo=1")
    prompt = page.input_value("textarea[name=prompt]")
    page.fill("textarea[name=prompt]", prompt.rstrip("\n") + "\nChange only calc.py; say which line you fixed.\n")
    page.click("#fork-submit")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    fork = int(page.url.rstrip("/").rsplit("/", 1)[1])
    stack.wait_run(fork, lambda r: r["state"] == "finished", timeout=90)
    page.goto(f"{stack.url}/runs/{fork}/compare/")
    shoot(page, out, "fork-compare", max_height=2000)


def storage_shot(stack, browser, out: Path, logins: dict[str, str], *, run_first: bool = False) -> None:
    """The admin's Storage page (docs: Retention) after finished runs: what each kind takes."""
    if run_first:
        stack.manage("auto", "task", "run", "reading-list", "storage", "--wait", timeout=120)
    page = browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()
    login(page, stack.url, "demo", logins["demo"])
    page.goto(stack.url + "/operations/storage/")
    shoot(page, out, "storage", max_height=1600)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--keep", action="store_true", help="keep the temp data folder (its path is printed)")
    parser.add_argument(
        "--only", choices=["coding", "storage", "evals", "fork", "packages"], help="take only these screenshots"
    )
    options = parser.parse_args()
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)

    stack = Stack()
    print(f"data: {stack.data}")
    try:
        stack.start()
        logins = stack.logins()
        if options.only == "coding":
            with sync_playwright() as pw:
                browser = launch_chromium(pw)
                coding_shots(stack, browser, out, logins)
                browser.close()
            return 0
        if options.only == "fork":
            with sync_playwright() as pw:
                browser = launch_chromium(pw)
                fork_shot(stack, browser, out, logins)
                browser.close()
            return 0
        if options.only == "packages":
            with sync_playwright() as pw:
                browser = launch_chromium(pw)
                packages_shot(stack, browser, out, logins)
                browser.close()
            return 0
        if options.only == "evals":
            with sync_playwright() as pw:
                browser = launch_chromium(pw)
                evals_shot(stack, browser, out, logins)
                browser.close()
            return 0
        if options.only == "storage":
            with sync_playwright() as pw:
                browser = launch_chromium(pw)
                storage_shot(stack, browser, out, logins, run_first=True)
                browser.close()
            return 0
        # a team's daily quota, roomy enough for the demo: the Spend page and the home page show its bar
        stack.manage("auto", "quota", "set", "installation", "--window", "day", "--tokens", "1s", "--dollars", "20")
        # history: one run that finishes, one stopped by a person
        stack.manage("auto", "task", "run", "reading-list", "unattended agents", "--wait", timeout=120)
        second = stack.run("reading-list", "budgets for agents")
        stack.wait_run(second, lambda r: r["pass_number"] >= 1 and r["state"] == "running")
        stack.manage("auto", "task", "stop", f"#{second}")
        stack.wait_run(second, lambda r: r["state"] == "finished")

        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            context = browser.new_context(viewport={"width": WIDTH, "height": 820})
            context.set_default_timeout(30_000)
            page = context.new_page()
            login(page, stack.url, "demo", logins["demo"])

            # a run started from the browser, watched live on the dashboard and its own page
            dashboard = context.new_page()
            dashboard.goto(stack.url + "/")
            page.goto(stack.url + RECIPE)
            page.click("#run-recipe")
            page.fill("input[name=arg_0]", "human oversight of automation")
            page.click("text=Preview (dry run)")
            page.locator("#preview pre.plan").wait_for()
            page.click("#run-submit")
            page.wait_for_url(re.compile(r"/runs/\d+/$"))
            page.wait_for_function("() => document.querySelectorAll('#run-steps details.step').length >= 7")
            shoot(dashboard, out, "dashboard-live")
            shoot(page, out, "run-live", until="#run-steps")
            print(f"    (mid-run: {steps_shown(page)} steps shown, state {page.inner_text('#run-state')})")

            page.wait_for_function("() => document.querySelector('#run-cause')", timeout=60_000)
            page.wait_for_selector("#run-report h1")
            page.wait_for_timeout(300)
            shoot(page, out, "run-finished", until="#run-report")

            page.goto(stack.url + "/history/")
            shoot(page, out, "history")

            page.goto(stack.url + RECIPE)
            shoot(page, out, "recipe", max_height=1600)

            # the editor with a live error, then a valid change proposed: its cost delta
            reviewer = browser.new_context(viewport={"width": WIDTH, "height": 900}).new_page()
            reviewer.set_default_timeout(30_000)
            login(reviewer, stack.url, "reviewer", logins["reviewer"])
            reviewer.goto(stack.url + RECIPE + "edit/")
            text = reviewer.input_value("#recipe-text")
            broken = text.replace("size: 8p", "size: 0b").replace("takeover_when: 90", "takeover_when: 5")
            reviewer.fill("#recipe-text", broken)
            reviewer.wait_for_selector("#validation .issues")
            reviewer.wait_for_timeout(200)
            shoot(reviewer, out, "editor-error")

            bigger = text.replace("size: 8p", "size: 1b").replace("budget: 24p", "budget: 3b")
            reviewer.fill("#recipe-text", bigger)
            reviewer.wait_for_selector("#validation .ok")
            reviewer.fill("input[name=message]", "Bigger budget: a book a pass, three at most")
            reviewer.click("#editor-form button[type=submit]")
            reviewer.wait_for_url(re.compile(r"/changes/\d+/$"))
            shoot(reviewer, out, "change-request")

            # people's word on the first run's verdicts, then a stricter goal re-judged over
            # the recipe's result snapshots (offline: the demo script's judge_if answers it)
            page.goto(stack.url + "/runs/1/")
            for number, note in ((1, "Three entries and PARTIAL: a NO is right."), (2, "Five annotated entries.")):
                page.fill(f"#pass-{number}-note", note)
                page.locator(f"#pass-{number} button[value=right]").click()
                page.wait_for_selector(f"#pass-{number}-label strong.ok")
            shoot(page, out, "verdict-labels", until="#run-timeline", max_height=1400)

            reviewer.goto(stack.url + RECIPE + "edit/")
            stricter = reviewer.input_value("#recipe-text").replace("at least five entries", "at least seven entries")
            reviewer.fill("#recipe-text", stricter)
            reviewer.wait_for_selector("#validation .ok")
            reviewer.fill("input[name=message]", "Ask for seven entries, not five")
            reviewer.click("#editor-form button[type=submit]")
            reviewer.wait_for_url(re.compile(r"/changes/\d+/$"))
            reviewer.locator("#rejudge form[method=post] button[type=submit]").click()
            reviewer.wait_for_selector("#rejudge-summary", timeout=60_000)
            reviewer.wait_for_function(
                "() => document.querySelector('.rejudge-state').textContent.includes('finished')"
            )
            reviewer.locator("#rejudge").scroll_into_view_if_needed()
            shoot(reviewer, out, "rejudge", until="#rejudge", max_height=2400)

            # who did what: the runs above (CLI and web), the stop, the proposed change
            page.goto(stack.url + "/audit/")
            shoot(page, out, "audit", max_height=1200)

            page.goto(stack.url + "/spend/")
            shoot(page, out, "spend", max_height=1600)
            coding_shots(stack, browser, out, logins)
            fork_shot(stack, browser, out, logins)
            evals_shot(stack, browser, out, logins)
            storage_shot(stack, browser, out, logins)
            browser.close()
    except Exception:
        for name in ("daphne", "qcluster"):
            print(f"--- {name}.log (tail)\n{stack.log(name)[-3000:]}", file=sys.stderr)
        raise
    finally:
        stack.stop(keep=options.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
