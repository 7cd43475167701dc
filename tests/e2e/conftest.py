"""One live rysh for the whole session (daphne + qcluster on a temp data dir) and one Chromium.

The e2e recipes are committed into the seeded demo repository and synced, so they are in the
catalogue like any other recipe: `e2e-slow` (a slow pass with a wrap-up, for the controls) and
`e2e-hostile` (model text, result files and a judge's reason full of markup).
"""

from __future__ import annotations

import pytest

from tests.e2e.stack import Stack, launch_chromium, login

SLOW_RECIPE = """\
---
description: e2e - a slow pass with a wrap-up leg, for the controls
loop:
  do:
    max_iterations: 20
    budget:
      size: 100p
      watch:
        takeover_when: 90
        takeover_prompt: Stop now and save what exists.
  while:
    max_iterations: 2
    prompts:
      until: notes are saved
---
Take notes.
"""

SLOW_SCRIPT = """\
latency_seconds: 0.4
passes:
  - task:
      - text: "Saving a first note."
        tool_calls:
          - {name: save_result, input: {filename: notes.md, content: "first note"}}
      - text: "Reading on."
        tool_calls:
          - {name: list_results, input: {}}
    repeat_last: true
    wrap-up:
      - text: "Saving what exists."
        tool_calls:
          - {name: save_result, input: {filename: notes.md, content: "notes, landed"}}
      - text: "Saved."
    judge: "YES\\nnotes saved"
"""

HOSTILE = "<img src=x onerror=alert('img')>"
HOSTILE_SCRIPT_TAG = "<script>alert('script')</script>"

HOSTILE_RECIPE = """\
---
description: e2e - markup everywhere a run can put text
args: [topic]
loop:
  do:
    budget: 20p
  while:
    max_iterations: 1
    prompts:
      until: the file is saved
---
Save a file about {{topic}}.
"""

HOSTILE_SCRIPT = f"""\
passes:
  - task:
      - text: "Saving {HOSTILE} and {HOSTILE_SCRIPT_TAG} now."
        tool_calls:
          - name: save_result
            input:
              filename: hostile.md
              content: |
                # Notes {HOSTILE}

                {HOSTILE_SCRIPT_TAG}

                [click](javascript:alert('link'))
          - name: save_result
            input:
              filename: page.html
              content: "<html><body>{HOSTILE}{HOSTILE_SCRIPT_TAG}</body></html>"
      - text: "Done {HOSTILE}."
    judge: "YES\\nsaved {HOSTILE} {HOSTILE_SCRIPT_TAG}"
"""

GRANT_RECIPE = """\
---
description: e2e - one pass is not enough; an operator grants another
loop:
  do:
    budget: 20p
  while:
    max_iterations: 1
    prompts:
      until: the list has two entries
---
Write a list.
"""

GRANT_SCRIPT = """\
passes:
  - task:
      - text: "Saving one entry."
        tool_calls:
          - {name: save_result, input: {filename: list.md, content: "- one"}}
      - text: "Saved."
    judge: "NO\\nonly one entry"
  - task:
      - text: "Adding the second."
        tool_calls:
          - {name: save_result, input: {filename: list.md, content: "- one\\n- two"}}
      - text: "Saved."
    judge: "YES\\ntwo entries"
"""

QUOTA_RECIPE = (
    """\
---
description: e2e - a recipe quota pauses the run; an admin raises it and the run goes on
loop:
  do:
    budget: 20p
---
Write a list.
"""
    + "Background the list draws on, long enough that its first call counts more than 2p. " * 120
)

QUOTA_SCRIPT = """\
passes:
  - task:
      - text: "Saving the list."
        tool_calls:
          - {name: save_result, input: {filename: list.md, content: "- one"}}
      - text: "Saved."
"""

APPROVE_RECIPE = """\
---
description: e2e - saving the result waits for a person
approve: ["save_result:final*"]
approve_timeout: 10m
loop:
  do:
    budget: 20p
  while:
    max_iterations: 1
    prompts:
      until: the final file is saved
---
Save the final file.
"""

APPROVE_SCRIPT = """\
passes:
  - task:
      - text: "Saving the final file."
        tool_calls:
          - {name: save_result, input: {filename: final.md, content: "done"}}
      - text: "Saved."
    judge: "YES\\nsaved"
"""

E2E_RECIPES = {
    ".rysh/automations/tasks/e2e-approve.md": APPROVE_RECIPE,
    ".rysh/automations/tasks/e2e-approve.script.yaml": APPROVE_SCRIPT,
    ".rysh/automations/tasks/e2e-grant.md": GRANT_RECIPE,
    ".rysh/automations/tasks/e2e-grant.script.yaml": GRANT_SCRIPT,
    ".rysh/automations/tasks/e2e-quota.md": QUOTA_RECIPE,
    ".rysh/automations/tasks/e2e-quota.script.yaml": QUOTA_SCRIPT,
    ".rysh/automations/tasks/e2e-slow.md": SLOW_RECIPE,
    ".rysh/automations/tasks/e2e-slow.script.yaml": SLOW_SCRIPT,
    ".rysh/automations/tasks/e2e-hostile.md": HOSTILE_RECIPE,
    ".rysh/automations/tasks/e2e-hostile.script.yaml": HOSTILE_SCRIPT,
}


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("rysh-e2e"))
    try:
        s.setup()
        s.add_recipes(E2E_RECIPES)
        s.start_web()
        s.start_worker()
    except Exception:
        s.stop()
        raise
    yield s
    s.stop()


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = launch_chromium(pw)
        yield b
        b.close()


@pytest.fixture
def as_user(stack, browser):
    """as_user("operator") -> a logged-in page in a fresh context (closed after the test).

    Every page the test opens is watched for Content-Security-Policy refusals: a script, style
    or socket the policy blocks fails the test, so the pages keep working under the policy."""
    contexts = []
    refused: list[str] = []

    def watch(message) -> None:
        if "Content Security Policy" in message.text:
            refused.append(f"{message.text} at {message.location}")

    def open_page(username: str | None):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.on("console", watch)
        if username:
            login(page, stack.url, username, stack.logins()[username])
        return page

    open_page.refused = refused  # a test that provokes a refusal on purpose checks and clears it
    yield open_page
    for context in contexts:
        context.close()
    assert not refused, f"the Content-Security-Policy refused: {refused}"


@pytest.fixture(autouse=True)
def no_active_runs_after(stack):
    """Each test leaves nothing running: cancel what runs, then stop what is paused or queued."""
    yield
    stack.query("""
        import time
        from runs import services
        from runs.models import Run
        from runs.models import ACTIVE_STATES
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            active = list(Run.objects.filter(state__in=ACTIVE_STATES))
            if not active:
                break
            for run in active:
                try:
                    if run.state in ("running", "awaiting approval") and not run.control:
                        services.run_cancel(run=run)
                    elif run.state in ("paused", "queued"):
                        services.run_stop(run=run)
                except services.RunRefused:
                    pass
            time.sleep(0.3)
        print(json.dumps(Run.objects.filter(state__in=ACTIVE_STATES).count()))""")
