"""What the engine does for web tools: screenshots reach the model as images (and count in the
input bound), Step rows keep no image data, old screenshots leave the conversation, and each
step keeps where the browser was."""

import base64

import pytest

from agents.ports import PageCapture, ToolResult, Tools
from budgets.guard import size
from runs.models import Pass, Step
from tests.conftest import drive  # noqa: F401
from tests.fake_model import FakeModel, tool
from tests.runs.test_approvals import drive_with

pytestmark = pytest.mark.django_db

JOB = "---\nloop:\n  do:\n    max_iterations: 20\n    budget:\n      size: 1b\n---\nLook around.\n"
JPEG = base64.b64encode(b"\xff\xd8" + b"x" * 3000).decode()


class SeeingTools(Tools):
    def __init__(self):
        self.closed = False
        self.n = 0

    def specs(self):
        return [{"name": "read_page", "description": "r", "input_schema": {"type": "object", "properties": {}}}]

    def call(self, name, arguments):
        return ToolResult("screenshot of the page", images=[{"media_type": "image/jpeg", "data": JPEG}])

    def capture(self):
        self.n += 1
        return PageCapture(url=f"https://example.test/{self.n}", title=f"Page {self.n}", jpeg=b"\xff\xd8thumb")

    def close(self):
        self.closed = True


def test_screenshots_reach_the_model_as_images_and_only_the_newest_three_stay(start, settings, tmp_path):
    settings.RYSH_SCREENSHOTS_DIR = tmp_path / "shots"
    run = start(JOB)
    tools = SeeingTools()
    model = FakeModel(
        task=[{"text": "look", "tools": [tool("read_page", n=i)]} for i in range(5)] + [{"text": "Done."}],
        repeat_last=False,
    )
    run = drive_with(run, model, tools)
    assert run.cause == "done" and tools.closed  # the worker let go of the browser
    messages = Pass.objects.get(run=run).messages
    results = [b for m in messages if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"]
    assert len(results) == 5
    images = [[c["type"] for c in r["content"]] for r in results]
    assert images[:2] == [["text", "text"], ["text", "text"]]  # dropped, a note in their place
    assert images[2:] == [["text", "image"]] * 3
    assert results[-1]["content"][1]["source"] == {"type": "base64", "media_type": "image/jpeg", "data": JPEG}
    # the call after an image was bounded by its base64 bytes, and so reserved at least that much
    step = Step.objects.get(run_pass__run=run, number=2)
    assert step.reserved_tokens > size(JPEG)
    first = Step.objects.get(run_pass__run=run, number=1)
    assert JPEG not in str(first.tool_results)
    assert first.tool_results[0]["content"] == "screenshot of the page\n[an image was shown to the model: 2 KB]"
    assert (first.page_url, first.page_title, first.screenshot) == (
        "https://example.test/1",
        "Page 1",
        f"{run.pk}/1-1.jpg",
    )
    assert (tmp_path / "shots" / first.screenshot).read_bytes() == b"\xff\xd8thumb"
