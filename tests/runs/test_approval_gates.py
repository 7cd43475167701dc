"""Approval gates that cannot be sidestepped (docs/approvals.md): a call is gated as what it amounts to,
URLs are matched in their normal form, and an approved action whose target changed while the
person looked is not taken."""

import pytest

from runs.approvals import gate, gate_call, normal_urls
from runs.models import Approval, ApprovalState, Step
from tests.fake_model import FakeModel, tool
from tests.runs.test_approvals import Person, Tools, drive_with

GATED = """
    ---
    approve: ["click:Publish*", "navigate:https://example.com/admin/*"]
    loop:
      do:
        max_iterations: 10
        budget:
          size: 1b
    ---
    Publish the story.
"""

pytestmark = pytest.mark.django_db(transaction=True)


class Page(Tools):
    """A tools port over a pretend page: Enter on `#go` clicks the button it shows, whose label
    a test can change (as a page may while a person looks at the approval)."""

    names = ("press", "click", "navigate")

    def __init__(self, label="Publish now", change_to=None):
        super().__init__()
        self.label, self.change_to = label, change_to
        self.asked = 0

    def approval_subjects(self, name, arguments):
        return [v for v in arguments.values() if isinstance(v, str)]

    def approval_equivalents(self, name, arguments):
        self.asked += 1
        if self.asked > 1 and self.change_to:
            self.label = self.change_to
        pairs = [(name, self.approval_subjects(name, arguments))]
        if name == "press" and arguments.get("key") == "Enter":
            pairs.append(("click", [arguments.get("selector", ""), self.label]))
        if name == "click":
            pairs[0][1].append(self.label)
        return pairs


def test_enter_on_a_gated_button_waits_for_approval_like_a_click(start):
    page = Page()
    model = FakeModel(task=[{"text": "go", "tools": [tool("press", key="Enter", selector="#go")]}, {"text": "Done."}])
    run = drive_with(start(GATED), model, page, Person(approved=True))
    approval = Approval.objects.get(run=run)
    assert (approval.tool_name, approval.pattern, approval.subject) == ("press", "click:Publish*", "Publish now")
    assert approval.state == ApprovalState.APPROVED
    assert page.calls == [("press", {"key": "Enter", "selector": "#go"})]


def test_an_approved_click_is_not_taken_when_the_page_changed_while_waiting(start):
    page = Page(change_to="Delete everything")
    model = FakeModel(task=[{"text": "go", "tools": [tool("click", selector="#go")]}, {"text": "Done."}])
    run = drive_with(start(GATED), model, page, Person(approved=True))
    assert page.calls == []
    result = Step.objects.get(run_pass__run=run, number=1).tool_results[0]
    assert result["is_error"] is True
    assert result["content"].startswith("not done: the page changed while waiting for approval; nothing was clicked.")
    assert "'Delete everything'" in result["content"]
    stale = run.events.get(kind="approval.stale")
    assert "not acted on: the page changed" in stale.message


def test_an_approved_press_is_not_taken_when_its_button_changed(start):
    page = Page(change_to="Delete everything")
    model = FakeModel(task=[{"text": "go", "tools": [tool("press", key="Enter", selector="#go")]}, {"text": "Done."}])
    run = drive_with(start(GATED), model, page, Person(approved=True))
    assert page.calls == []
    content = Step.objects.get(run_pass__run=run, number=1).tool_results[0]["content"]
    assert "nothing was clicked" in content


def test_a_percent_encoded_admin_url_is_held(start):
    page = Page()
    model = FakeModel(
        task=[{"text": "go", "tools": [tool("navigate", url="https://example.com/%61dmin/users")]}, {"text": "Done."}]
    )
    run = drive_with(start(GATED), model, page, Person(approved=False, reason="no"))
    approval = Approval.objects.get(run=run)
    assert approval.pattern == "navigate:https://example.com/admin/*" and page.calls == []


def test_gate_call_tries_each_equivalent_in_order():
    pairs = [("press", ["Enter", "#go"]), ("click", ["#go", "Publish now"])]
    assert gate_call(["click:Publish*"], pairs) == ("click:Publish*", "Publish now")
    assert gate_call(["press"], pairs) == ("press", "")
    assert gate_call(["navigate"], pairs) is None


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/%61dmin/x",
        "HTTPS://EXAMPLE.com:443/admin/x",
        "https://example.com/x/../admin/y",
        "https://example.com/./admin/x",
        "https://example.com/%2e%2E/admin/x",
        "https://user@example.com/admin/x",
        "https://example.com./admin/x",
        "https://example.com\\admin\\x",
        "https://example.com/ad\tmin/x",
        "https://example.com/admin%2Fx",  # a server may decode %2F
    ],
)
def test_navigate_patterns_hold_every_spelling_of_the_url(url):
    assert gate(["navigate:https://example.com/admin/*"], "navigate", [url]) is not None, normal_urls(url)


def test_a_pattern_that_is_a_url_is_normalised_too_and_nothing_more_is_held():
    assert gate(["navigate:HTTPS://Example.COM:443/%61dmin/*"], "navigate", ["https://example.com/admin/x"])
    for url in ("https://example.com/administrator", "https://example.com/public/admin/x", "https://evil.test/admin/x"):
        assert gate(["navigate:https://example.com/admin/*"], "navigate", [url]) is None, url
    assert gate(["navigate:http://example.com:8080/*"], "navigate", ["http://example.com/x"]) is None
    assert normal_urls("Publish now") == [] and normal_urls("*/admin/*") == []
