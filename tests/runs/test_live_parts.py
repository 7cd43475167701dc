"""Only what changed is sent (runs/live/hub.py): a push splits into its top-level elements by id, a
socket that has its first state is sent only the elements whose HTML changed, and its outbox keeps
the newest HTML of each element. Anything that does not split cleanly goes whole, as before."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from hypothesis import given
from hypothesis import strategies as st

from runs.live import fragments, hub
from runs.models import Run
from tests.runs.test_consumers import ORIGIN, connect, make_run, session_cookie
from tests.runs.test_live_hub import change, user_with

TEXT = st.text(alphabet=st.sampled_from("ab <>&\"'=/-"), max_size=12).map(
    lambda t: t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")  # escaped, as Django does
)


@st.composite
def element(draw, depth=0, with_id=None):
    name = draw(st.sampled_from(["section", "div", "span", "tr", "ul", "svg"]))
    attrs = f' id="{with_id}"' if with_id else ""
    if draw(st.booleans()):
        attrs += ' title="a > b"'  # a quoted ">" is part of the tag
    inner = []
    for _ in range(draw(st.integers(0, 3 if depth < 2 else 0))):
        kind = draw(st.sampled_from(["text", "child", "void", "self", "comment"]))
        if kind == "text":
            inner.append(draw(TEXT))
        elif kind == "child":
            inner.append(draw(element(depth + 1)))
        elif kind == "void":
            inner.append("<br>")
        elif kind == "self":
            inner.append('<rect width="2"/>')
        else:
            inner.append("<!-- <section> -->")
    return f"<{name}{attrs}>{''.join(inner)}</{name}>"


@st.composite
def push(draw):
    ids = draw(st.lists(st.from_regex(r"[a-z]{1,6}-[0-9]{1,3}", fullmatch=True), min_size=1, max_size=6, unique=True))
    return {key: draw(element(with_id=key)) for key in ids}


@given(push(), st.sampled_from(["", "\n", "  \n "]))
def test_it_splits_a_push_into_its_elements_by_id(parts, gap):
    assert hub.split(gap.join(parts.values()) + gap) == parts


@pytest.mark.parametrize(
    "html",
    [
        'text first <section id="a"></section>',
        '<section id="a"></section> text between <section id="b"></section>',
        "<section></section>",  # no id at the top
        '<section id="a"><div></section>',  # unbalanced
        '<section id="a"></section></div>',
        '<section id="a"></section><section id="a"></section>',  # the same id twice
        '<br><section id="a"></section>',
        "",
    ],
)
def test_what_does_not_split_cleanly_goes_whole(html):
    assert hub.split(html) is None


def test_changed_parts_are_those_new_or_different():
    assert hub.changed_parts({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == {"b": "3", "c": "4"}


def test_an_outbox_keeps_the_newest_html_of_each_element_in_order():
    sent = []

    async def go():
        async def send(html):
            sent.append(html)

        box = hub.Outbox(send)
        box.offer({"a": "<i id=a>1</i>", "b": "<i id=b>1</i>"})
        box.offer({"b": "<i id=b>2</i>"})
        box.offer({"a": "<i id=a>3</i>"})
        task = asyncio.ensure_future(box.pump())
        await asyncio.sleep(0.01)
        task.cancel()

    with ThreadPoolExecutor(max_workers=1) as pool:  # in the whole suite Playwright's loop runs in this thread
        pool.submit(asyncio.run, go()).result()
    assert sent == ["<i id=a>3</i><i id=b>2</i>"]


@pytest.mark.django_db(transaction=True)
def test_a_change_sends_only_the_sections_it_changed_and_a_new_socket_gets_them_all(settings):
    settings.RYSH_LIVE_POLL_MS = 20
    run = make_run()
    first, second = user_with("first"), user_with("second")
    sections = set(hub.split(fragments.fragments("run", run.pk, frozenset())))
    assert {"run-head", "run-timeline", "run-steps", "run-events", "nav-approvals"} <= sections

    async def go():
        a, _, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, await sync_to_async(session_cookie)(first)])
        assert set(hub.split(await a.receive_from(timeout=5))) == sections
        await sync_to_async(change)(run, last_verdict="Z")
        got = hub.split(await a.receive_from(timeout=5))
        # the head shows the verdict, the events list the new event; nothing else changed
        assert set(got) == {"run-head", "run-events"}
        assert '<span id="run-verdict">Z</span>' in got["run-head"]
        b, _, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, await sync_to_async(session_cookie)(second)])
        assert set(hub.split(await b.receive_from(timeout=5))) == sections  # its first state: all of it
        await a.disconnect()
        await b.disconnect()

    async_to_sync(go)()
    assert Run.objects.get(pk=run.pk).last_verdict == "Z"
