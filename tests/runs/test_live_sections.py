"""A change renders only the sections of a run's page it can touch (runs/live/sections.py): a step
event's push is rendered from the sections mapped for a step and nothing else, a kind not in the
mapping renders the whole fragment, and after any sequence of changes the page a socket holds is
the page a full render shows."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import transaction
from hypothesis import given
from hypothesis import strategies as st

from runs.live import fragments, hub, sections
from runs.models import Pass, Run, RunEvent
from runs.states import EventKind
from tests.runs.test_consumers import ORIGIN, connect, make_run, session_cookie
from tests.runs.test_live_hub import user_with

KINDS = st.sampled_from([str(k) for k in EventKind] + ["label", "bench", ""])


def test_every_mapped_kind_is_an_event_kind_and_every_section_is_on_the_page():
    assert set(sections.TOUCHES) <= {str(k) for k in EventKind}
    for touched in sections.TOUCHES.values():
        assert sections.EVENTS in touched  # each event is a line in the events list
        assert touched <= set(sections.RUN_SECTIONS)
    assert set(fragments.SECTION_TEMPLATES) | {sections.NAV} == set(sections.RUN_SECTIONS)


@given(st.lists(KINDS, max_size=5))
def test_a_change_touches_what_its_kinds_touch_together_or_everything(kinds):
    got = sections.sections_for(kinds)
    if not kinds or any(kind not in sections.TOUCHES for kind in kinds):
        assert got is None  # the whole fragment: never a stale page
    else:
        assert got == frozenset().union(*(sections.TOUCHES[kind] for kind in kinds))
    assert sections.union(got, frozenset()) == got
    assert sections.union(got, None) is None


def test_a_step_touches_the_steps_and_the_head_but_not_the_approvals_or_the_files():
    step = sections.sections_for(["step"])
    assert {sections.STEPS, sections.HEAD, sections.EVENTS} <= step
    assert not {sections.APPROVALS, sections.FILES, sections.NAV} & step
    assert sections.sections_for(["todo"]) == {sections.AGENTS, sections.EVENTS}
    assert sections.sections_for(["approval.requested"]) >= {sections.APPROVALS, sections.NAV}
    assert sections.sections_for(["step", "note"]) is None


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["task", "web"])
def test_all_sections_rendered_one_by_one_are_the_whole_fragment(kind):
    run = make_run(kind=kind)
    Pass.objects.create(run=run, number=1, reason="first")
    whole = hub.split(fragments.fragments("run", run.pk, frozenset({"operate"})))
    apart = hub.split(fragments.run_sections(run.pk, frozenset({"operate"}), sections.RUN_SECTIONS))
    assert apart == whole
    one = hub.split(fragments.run_sections(run.pk, frozenset(), {sections.STEPS}))
    assert set(one) == {sections.STEPS}


def record(run: Run, kind: str, **data) -> None:
    """A worker's write in another process: some state and its event, one commit, no push."""
    with transaction.atomic():
        if kind == "step":
            Run.objects.filter(pk=run.pk).update(tokens_counted=Run.objects.get(pk=run.pk).tokens_counted + 100)
        if kind == "verdict":
            Pass.objects.filter(run=run, number=1).update(verdict="PASS", reason=data.pop("reason"))
            Run.objects.filter(pk=run.pk).update(last_verdict="PASS")
        if kind == "pass.started":
            Pass.objects.create(run=run, number=2)
            Run.objects.filter(pk=run.pk).update(pass_number=2)
        RunEvent.objects.create(run=run, kind=kind, message=f"{kind} {data}", data=data)


@pytest.mark.django_db(transaction=True)
def test_a_step_event_renders_only_its_sections_and_the_page_ends_up_a_full_render(settings, monkeypatch):
    settings.RYSH_LIVE_POLL_MS = 20
    run = make_run()
    Pass.objects.create(run=run, number=1)
    cookie = session_cookie(user_with("watcher"))
    asked, real = [], fragments.run_sections

    def counting(run_id, can, wanted):
        asked.append(frozenset(wanted))
        return real(run_id, can, wanted)

    monkeypatch.setattr(fragments, "run_sections", counting)
    script = [
        ("step", {}),
        ("todo", {"items": [{"text": "read the list", "status": "in_progress"}]}),
        ("step", {}),
        ("verdict", {"reason": "all read"}),
        ("pass.started", {}),
        ("note", {}),  # not mapped: the whole fragment
        ("step", {}),
    ]

    async def go():
        socket, connected, _ = await connect(f"/ws/runs/{run.pk}/", [ORIGIN, cookie])
        assert connected
        page = hub.split(await socket.receive_from(timeout=5))  # its first state: every section
        for kind, data in script:
            asked.clear()
            await sync_to_async(record)(run, kind, **dict(data))
            got = hub.split(await socket.receive_from(timeout=5))
            touched = sections.sections_for([kind])
            if touched is None:
                assert asked == []  # the whole fragment, by fragments.fragments
            else:
                assert asked == [touched]  # rendered: the sections mapped for it, nothing more
                assert set(got) <= touched  # and sent: those of them whose HTML changed
                assert sections.EVENTS in got
            if kind == "step":
                assert not {sections.APPROVALS, sections.FILES, sections.NAV} & asked[0]
            if kind == "todo":
                assert set(got) == {sections.AGENTS, sections.EVENTS} and "read the list" in got[sections.AGENTS]
            page.update(got)
        full = await sync_to_async(lambda: hub.split(fragments.fragments("run", run.pk, frozenset())))()
        assert page.keys() == full.keys()
        for key in full:
            assert page[key] == full[key], key
        await socket.disconnect()

    async_to_sync(go)()
