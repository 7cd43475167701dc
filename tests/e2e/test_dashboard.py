"""The live dashboard in real Chromium against a live daphne and a real django-q2 worker.

Nothing here reloads a page to see a change: what the tests watch arrives over the websocket
(on the embedded default the web process's live hub tails the RunEvent log every
RYSH_LIVE_POLL_MS and sends each socket its view's HTML).
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from tests.e2e.conftest import HOSTILE, HOSTILE_SCRIPT_TAG

pytestmark = pytest.mark.e2e

# Records, on every DOM mutation, what the run page shows; window.__page_id proves no reload.
RUN_RECORDER = """() => {
  window.__page_id = Math.random();
  window.__seen = [];
  const grab = () => {
    const text = (sel) => { const el = document.querySelector(sel); return el ? el.textContent.trim() : null; };
    const used = document.querySelector("#run-head .budget .bar .used");
    const row = {state: text("#run-state"), pass: text("#run-pass"), verdict: text("#run-verdict"),
                 cause: text("#run-cause"), used: used ? parseFloat(used.style.width) : null,
                 wrap: text("#pass-1 td:nth-child(5)")};
    const last = window.__seen[window.__seen.length - 1];
    if (!last || JSON.stringify(last) !== JSON.stringify(row)) window.__seen.push(row);
  };
  grab();
  new MutationObserver(grab).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  return window.__page_id;
}"""

HOME_RECORDER = """(pk) => {
  window.__page_id = Math.random();
  window.__rows = [];
  const grab = () => {
    const row = document.getElementById("run-row-" + pk);
    const history = document.getElementById("history-row-" + pk);
    const now = {state: row ? row.dataset.state : null, pass: row ? row.querySelector("td.pass").textContent.trim() : null,
                 in_history: !!(history && history.closest("#recent-runs"))};
    const last = window.__rows[window.__rows.length - 1];
    if (!last || JSON.stringify(last) !== JSON.stringify(now)) window.__rows.push(now);
  };
  grab();
  new MutationObserver(grab).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  return window.__page_id;
}"""


def run_id_from(url: str) -> int:
    return int(re.search(r"/runs/(\d+)/", url).group(1))


def open_run_page(page, stack, pk: int):
    page.goto(f"{stack.url}/runs/{pk}/")
    page.wait_for_function("() => window.htmx !== undefined")
    return page.evaluate(RUN_RECORDER)


def wait_text(page, selector: str, pattern: str, timeout: float = 20_000) -> None:
    page.wait_for_function(
        "([sel, pat]) => { const el = document.querySelector(sel); return !!el && new RegExp(pat).test(el.textContent); }",
        arg=[selector, pattern],
        timeout=timeout,
    )


def wait_steps(page, n: int, timeout: float = 20_000) -> None:
    page.wait_for_function(
        "(n) => document.querySelectorAll('#run-steps details.step').length >= n", arg=n, timeout=timeout
    )


def accept_dialogs(page) -> list[str]:
    said = []

    def on_dialog(dialog):
        said.append(dialog.message)
        dialog.accept()

    page.on("dialog", on_dialog)
    return said


def test_it_runs_the_demo_from_the_browser_and_watches_it_live(stack, as_user):
    page = as_user("operator")
    home = page.context.new_page()  # the dashboard, open before the run exists
    home.goto(f"{stack.url}/")
    assert "Nothing is running" in home.inner_text("#live-table")

    runs_before = stack.query("from runs.models import Run\nprint(json.dumps(Run.objects.count()))")
    page.goto(f"{stack.url}/recipes/task/reading-list/")
    page.click("#run-recipe")
    page.fill("input[name=arg_0]", "unattended agents")
    page.click("text=Preview (dry run)")
    preview = page.locator("#preview pre.plan")
    preview.wait_for()
    assert "dry run: task/reading-list  (nothing is changed)" in preview.inner_text()
    assert "Compile an annotated reading list on unattended agents." in preview.inner_text()
    # the preview made nothing (other tests of the session may have runs of their own)
    assert stack.query("from runs.models import Run\nprint(json.dumps(Run.objects.count()))") == runs_before

    page.click("#run-submit")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    pk = run_id_from(page.url)
    page_id = page.evaluate(RUN_RECORDER)
    home_id = home.evaluate(HOME_RECORDER, pk)

    wait_text(page, "#run-cause", "^fulfilled$", timeout=45_000)
    seen = page.evaluate("window.__seen")
    assert page.evaluate("window.__page_id") == page_id  # never reloaded
    states = [s["state"] for s in seen]
    assert "running pass" in states and "wrap-up" in states and "judging" in states and states[-1] == "finished"
    assert [s["pass"] for s in seen if s["pass"] != "pass 0/3"][0] == "pass 1/3" and seen[-1]["pass"] == "pass 2/3"
    verdicts = [v for i, v in enumerate(s["verdict"] for s in seen) if i == 0 or v != seen[i - 1]["verdict"]]
    assert verdicts[-2:] == ["NO", "YES"]
    widths = [s["used"] for s in seen if s["pass"] == "pass 1/3" and s["used"] is not None]
    assert len(set(widths)) >= 5 and max(widths) > widths[0]  # the budget bar filled step by step
    assert page.inner_text("#pass-1 .verdict") == "NO" and page.inner_text("#pass-2 .verdict") == "YES"
    assert "reading-list.md" in page.inner_text("#run-files")
    assert "Run report: task/reading-list" in page.inner_text("#run-report")

    row = stack.run_row(pk)
    assert row["state"] == "finished" and row["cause"] == "fulfilled"
    assert row["passes"] == ["NO", "YES"] and row["pass_number"] == 2

    # the dashboard, open all along: the row came, changed state, and moved to Recent history
    home.wait_for_selector(f"#recent-runs #history-row-{pk}")
    home.wait_for_function(f"() => !document.getElementById('run-row-{pk}')")
    rows = home.evaluate("window.__rows")
    assert home.evaluate("window.__page_id") == home_id
    live_states = [r["state"] for r in rows if r["state"]]
    assert "running pass" in live_states and len(set(live_states)) >= 3, rows
    assert rows[-1] == {"state": None, "pass": None, "in_history": True}
    assert "fulfilled" in home.inner_text(f"#history-row-{pk}")


def test_it_cancels_and_continues_from_the_run_page(stack, as_user):
    page = as_user("operator")
    pk = stack.run("e2e-slow")
    open_run_page(page, stack, pk)
    wait_steps(page, 2)
    said = accept_dialogs(page)
    page.click("#run-head button:has-text('Cancel')")
    wait_text(page, "#run-state", r"^paused\(cancelled\)$")
    assert said and said[0].startswith(f"Cancel run #{pk} now?")
    row = stack.run_row(pk)
    assert (row["state"], row["pause_reason"]) == ("paused", "cancelled")
    assert page.locator("#run-head button", has_text="Resume").count() == 1  # a cancelled run may be resumed

    page.click("#run-head button:has-text('Continue')")
    wait_text(page, "#run-state", "^(queued|running pass|wrap-up|judging)$")
    assert stack.run_row(pk)["state"] in ("queued", "running")
    wait_text(page, "#run-cause", "^fulfilled$", timeout=40_000)
    row = stack.run_row(pk)
    assert (row["state"], row["cause"], row["passes"]) == ("finished", "fulfilled", ["YES"])
    assert "continue from paused(cancelled)" in page.inner_text("#run-events")


def test_it_lands_now_from_the_run_page(stack, as_user):
    page = as_user("operator")
    pk = stack.run("e2e-slow")
    open_run_page(page, stack, pk)
    wait_steps(page, 1)
    wait_text(page, "#run-state", "^running pass$")
    said = accept_dialogs(page)
    page.click("#run-head button:has-text('Land now')")
    assert said and said[0].startswith(f"Land run #{pk} now?")
    page.wait_for_function(
        "() => document.querySelector('#run-state').textContent.trim() === 'wrap-up'"
        " || /land now/.test(document.querySelector('#pass-1') ? document.querySelector('#pass-1').textContent : '')"
    )
    wait_text(page, "#run-cause", "^fulfilled$", timeout=30_000)
    assert page.inner_text("#pass-1 td:nth-child(4)") == "land now"  # the task leg's stop
    row = stack.run_row(pk)
    assert row["cause"] == "fulfilled" and row["takeover"] == [True]
    steps = stack.query(f"""
        from runs.models import Step
        print(json.dumps(list(Step.objects.filter(run_pass__run_id={pk}).order_by("number").values_list("leg", flat=True))))""")
    assert steps.count("task") < 18 and "wrap-up" in steps  # landed before the task leg's 18 steps ran out


def test_it_stops_then_resumes_from_the_run_page(stack, as_user):
    page = as_user("operator")
    pk = stack.run("e2e-slow")
    open_run_page(page, stack, pk)
    wait_steps(page, 1)
    said = accept_dialogs(page)
    page.click("#run-head button:has-text('Stop')")
    assert said and said[0].startswith(f"Stop run #{pk}?")
    wait_text(page, "#run-head", r"stop requested")
    wait_text(page, "#run-cause", "^stopped by user$", timeout=30_000)
    row = stack.run_row(pk)
    assert (row["state"], row["cause"], row["passes"]) == ("finished", "stopped by user", [""])  # never judged

    page.click("#run-head button:has-text('Resume')")  # a finished run: HX-Redirect to the new run
    page.wait_for_url(lambda url: re.search(r"/runs/(\d+)/$", url) and run_id_from(url) != pk)
    new = run_id_from(page.url)
    assert f"Resumes run #{pk}" in page.inner_text("main")
    assert page.locator(f"main a[href='/runs/{pk}/']", has_text=f"run #{pk}").count() == 1
    assert stack.run_row(new)["resumed_from"] == pk
    assert f"run #{new} started, resuming run #{pk}" in page.inner_text("main")


def test_a_viewer_sees_no_controls_and_anonymous_sockets_are_refused(stack, as_user):
    pk = stack.run("e2e-slow")
    operator = as_user("operator")
    open_run_page(operator, stack, pk)
    wait_steps(operator, 1)
    assert operator.locator("#run-head .controls button").count() >= 2

    viewer = as_user("viewer")
    viewer.goto(f"{stack.url}/")
    viewer.wait_for_selector(f"#run-row-{pk}")
    open_run_page(viewer, stack, pk)
    wait_steps(viewer, 2)  # the viewer gets the live updates
    assert viewer.locator("button[data-control-url], .controls").count() == 0
    viewer.goto(f"{stack.url}/")
    viewer.wait_for_selector(f"#run-row-{pk}")
    assert viewer.locator("button[data-control-url], .controls").count() == 0
    viewer.goto(f"{stack.url}/recipes/task/reading-list/")
    assert viewer.locator("#run-recipe").count() == 0

    anonymous = as_user(None)
    anonymous.goto(f"{stack.url}/")
    assert "/login/" in anonymous.url and anonymous.locator("input[name=password]").count() == 1
    anonymous.goto(f"{stack.url}/runs/{pk}/")
    assert "/login/" in anonymous.url
    result = anonymous.evaluate(
        """(url) => new Promise((resolve) => {
        const got = {opened: false, messages: 0};
        const ws = new WebSocket(url);
        ws.onopen = () => { got.opened = true; };
        ws.onmessage = () => { got.messages += 1; };
        ws.onclose = (e) => { got.code = e.code; resolve(got); };
        setTimeout(() => resolve({...got, timeout: true}), 5000);
    })""",
        f"ws://127.0.0.1:{stack.port}/ws/live/",
    )
    assert result.get("timeout") is None and result["messages"] == 0 and not result["opened"], result


class SocketSwitch:
    """Websockets to /ws/ go through Playwright's route: forwarded when on; when off, the page's
    socket is dropped with 1012 (service restart: the htmx ws extension reconnects) and new ones
    are held silent until `on()` drops them again so that the extension reconnects for real."""

    def __init__(self, page):
        self.live = True
        self.routes = []
        self.lock = threading.Lock()
        page.route_web_socket(re.compile(r"/ws/"), self._handle)

    def _handle(self, ws):
        with self.lock:
            self.routes.append(ws)
        if self.live:
            ws.connect_to_server()

    def _drop_all(self):
        with self.lock:
            routes, self.routes = self.routes, []
        for ws in routes:
            try:
                ws.close(code=1012, reason="e2e")
            except Exception:
                pass

    def off(self):
        self.live = False
        self._drop_all()

    def on(self):
        self.live = True
        self._drop_all()


def test_it_catches_up_after_the_socket_drops(stack, as_user):
    page = as_user("operator")
    switch = SocketSwitch(page)
    pk = stack.run("e2e-slow")
    page_id = open_run_page(page, stack, pk)
    wait_steps(page, 1)
    wait_text(page, "#run-state", "^running pass$")
    page.evaluate("window.__closes = 0; document.body.addEventListener('htmx:wsClose', () => window.__closes++)")

    switch.off()
    page.wait_for_function("() => window.__closes >= 1")
    shown = page.inner_text("#run-steps")
    stack.manage("auto", "task", "cancel", f"#{pk}")
    stack.wait_run(pk, lambda r: r["state"] == "paused")
    time.sleep(1.0)  # a connected page would have shown it by now (tail every 25 ms)
    assert page.inner_text("#run-state") == "running pass"  # stale: nothing reaches it

    switch.on()
    wait_text(page, "#run-state", r"^paused\(cancelled\)$", timeout=15_000)
    assert page.evaluate("window.__page_id") == page_id  # caught up without a reload
    steps_in_db = stack.query(f"""
        from runs.models import Step
        print(json.dumps(Step.objects.filter(run_pass__run_id={pk}).count()))""")
    page.wait_for_function("(n) => document.querySelectorAll('#run-steps details.step').length === n", arg=steps_in_db)
    assert page.inner_text("#run-steps") != shown


def test_it_shows_markup_from_a_run_as_text(stack, as_user):
    page = as_user("operator")
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{stack.url}/recipes/task/e2e-hostile/run/")
    assert page.locator("#run-form input[name=headless]").count() == 0  # a task drives no browser
    assert "headless" not in page.inner_text("#run-form")
    page.fill("input[name=arg_0]", "<b>bold</b>")
    page.click("#run-submit")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    pk = run_id_from(page.url)
    page.wait_for_function("() => window.htmx !== undefined")
    wait_text(page, "#run-cause", "^fulfilled$", timeout=30_000)  # every fragment has arrived live
    wait_text(page, "#run-report", "Run report")

    def no_injection():
        assert page.locator("img[src='x']").count() == 0
        assert page.evaluate("() => [...document.scripts].filter(s => /alert/.test(s.textContent)).length") == 0
        assert page.locator("main b").count() == 0
        assert page.locator("a[href^='javascript:']").count() == 0

    no_injection()
    steps = page.inner_text("#run-steps")  # closed <details> still have their text in the DOM
    assert f"Saving {HOSTILE} and {HOSTILE_SCRIPT_TAG} now." in page.text_content("#run-steps")
    assert "save_result" in steps
    assert f"saved {HOSTILE} {HOSTILE_SCRIPT_TAG}" in page.inner_text("#run-timeline")
    assert HOSTILE in page.inner_text("#run-report")
    assert "<b>bold</b>" in page.inner_text("main")

    page.reload()  # the server-rendered page, not only the pushed fragments
    page.wait_for_selector("#run-files a")
    no_injection()

    for name in ("hostile.md", "page.html"):
        page.goto(f"{stack.url}/runs/{pk}/files/{name}")
        assert HOSTILE in page.inner_text("pre.raw") and HOSTILE_SCRIPT_TAG in page.inner_text("pre.raw")
        no_injection()
    page.wait_for_timeout(300)
    assert dialogs == []
    # the detectors work: the same markup, injected for real, is found, and on a page without the
    # dashboard's Content-Security-Policy it fires its dialog
    page.evaluate("(html) => document.body.insertAdjacentHTML('beforeend', html)", HOSTILE)
    page.wait_for_timeout(300)
    assert page.locator("img[src='x']").count() == 1
    # on the dashboard the policy is the second wall: the handler is refused, nothing runs
    assert dialogs == [] and any("inline event handler" in m for m in as_user.refused), as_user.refused
    as_user.refused.clear()
    page.goto("about:blank")  # a page without the policy
    page.set_content(f"<body>{HOSTILE}</body>")
    page.wait_for_timeout(300)
    assert dialogs == ["img"]


def test_pages_work_under_the_content_security_policy(stack, as_user):
    """Every response carries the policy; the editor's script and the demo site's styles, once
    inline, still work (as_user fails the test on any refusal the browser reports)."""
    page = as_user("reviewer")
    response = page.goto(f"{stack.url}/recipes/task/reading-list/edit/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy
    page.wait_for_selector("#gutter span")
    before = page.locator("#gutter span").count()
    page.locator("#recipe-text").focus()
    page.keyboard.press("Control+End")
    page.keyboard.type("\nanother line\nand one more")
    page.wait_for_function(f"document.querySelectorAll('#gutter span').length === {before + 2}")
    page.goto(f"{stack.url}/demo-site/")
    assert "Georgia" in page.evaluate("getComputedStyle(document.body).fontFamily")


def test_an_operator_grants_a_run_at_its_pass_cap_and_it_goes_on_to_fulfilled(stack, as_user):
    pk = stack.run("e2e-grant")
    page = as_user("operator")
    open_run_page(page, stack, pk)
    wait_text(page, "#run-cause", "^unfulfilled: the 1-pass cap is reached$", timeout=30_000)
    page.wait_for_selector("form.grant-form")  # pushed with the run's end: no reload
    asked = accept_dialogs(page)
    page.fill("form.grant-form input[name=passes]", "1")
    page.click("form.grant-form button[type=submit]")
    wait_text(page, "#flash", "granted \\+1 pass")
    assert asked and "Grant run" in asked[0]
    wait_text(page, "#run-cause", "^fulfilled$", timeout=30_000)
    assert "granted +1 pass by operator" in page.inner_text("#run-events")
    assert "maxIter=2" in page.inner_text("pre.plan")
    assert "## Grants" not in page.inner_text("#run-report") and "Grants" in page.inner_text("#run-report")
    assert page.locator("#run-timeline tr[id^=pass-]").count() == 2  # the same run, its history kept


def test_an_approval_appears_in_the_inbox_live_and_is_answered_there(stack, as_user):
    inbox = as_user("operator")
    inbox.goto(f"{stack.url}/approvals/")
    inbox.wait_for_function("() => window.htmx !== undefined")
    assert inbox.locator("#inbox-empty").count() == 1 and inbox.locator("#nav-approvals-count").count() == 0
    history = inbox.context.new_page()  # a page without its own socket: the nav's count is live too
    history.goto(f"{stack.url}/history/")
    history.wait_for_function("() => window.htmx !== undefined")

    pk = stack.run("e2e-approve")
    row = inbox.locator("#approvals-inbox tbody tr")
    row.wait_for(timeout=30_000)  # no reload
    assert f"run #{pk}" in row.inner_text() and "save_result" in row.inner_text()
    assert "final.md" in row.inner_text() and "minutes" in row.inner_text()
    wait_text(inbox, "#nav-approvals-count", "^1$")
    wait_text(history, "#nav-approvals-count", "^1$")

    inbox.locator("#approvals-inbox input[name=reason]").fill("looks right")
    inbox.click("#approvals-inbox button:has-text('Approve')")
    wait_text(inbox, "#flash", "approved")
    inbox.wait_for_selector("#inbox-empty")
    history.wait_for_function("() => !document.getElementById('nav-approvals-count')")
    for _ in range(60):
        if stack.run_row(pk)["cause"] == "fulfilled":
            break
        inbox.wait_for_timeout(500)
    assert stack.run_row(pk)["cause"] == "fulfilled"


def test_an_admin_sets_a_daily_quota_the_run_waits_on_it_and_goes_on_when_it_is_raised(stack, as_user):
    admin = as_user("demo")  # the demo login is an admin
    admin.goto(f"{stack.url}/quotas/")
    admin.select_option("select[name=scope]", "recipe")
    admin.select_option("select[name=recipe]", "task/e2e-quota")
    admin.select_option("select[name=window]", "day")
    admin.fill("input[name=tokens]", "2p")  # less than one call needs
    admin.click("form.spend-form button[type=submit]")
    wait_text(admin, "#flash", "today.s quota of recipe task/e2e-quota set to 2p tokens")

    pk = stack.run("e2e-quota")
    watcher = as_user("operator")
    open_run_page(watcher, stack, pk)
    wait_text(watcher, "#run-state", "^paused\\(quota: recipe\\)$", timeout=30_000)  # live, no reload
    wait_text(watcher, "#run-quota-wait", "today's quota of recipe task/e2e-quota has .* tokens left")

    admin.goto(f"{stack.url}/quotas/")
    admin.select_option("select[name=scope]", "recipe")
    admin.select_option("select[name=recipe]", "task/e2e-quota")
    admin.select_option("select[name=window]", "day")
    admin.fill("input[name=tokens]", "1s")
    admin.click("form.spend-form button[type=submit]")
    wait_text(admin, "#flash", "set to 1s tokens")
    wait_text(watcher, "#run-cause", "^done$", timeout=30_000)  # it went on by itself
    assert "continue from paused(quota: recipe)" in watcher.inner_text("#run-events")

    admin.goto(f"{stack.url}/spend/")
    assert "task/e2e-quota" in admin.inner_text("main")
    admin.goto(f"{stack.url}/quotas/")
    admin.click("#quota-list a:has-text('Remove')")
    admin.click("main button.danger:has-text('Remove')")
    wait_text(admin, "#flash", "removed")
