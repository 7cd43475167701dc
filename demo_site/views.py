"""Tiny Press: a toy publishing site the dashboard serves for the offline web demo.

Public on purpose (no login): it is the page the demo's agent drives in a real browser,
like Medium for the seeds' publishing recipe — write a story, save it as a draft, publish
the draft. Stories live in the visitor's session, so each browser profile has its own and
a draft saved in one pass is still there in the next.

Mounted only while the demo is on (RYSH_DEMO_SITE), and bounded: reading never creates a
session, a visitor keeps at most MAX_STORIES (the oldest go first), and an anonymous visitor's
session expires after a day (django's clearsessions removes it).
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

SESSION_KEY = "demo_site_stories"
MAX_STORIES = 20
MAX_TITLE = 200
MAX_BODY = 20_000
ANONYMOUS_SESSION_SECONDS = 24 * 3600


def _stories(request: HttpRequest) -> list[dict]:
    """The visitor's stories, read only: a visitor who never saves gets no session row."""
    return request.session.get(SESSION_KEY, [])


def _save(request: HttpRequest, stories: list[dict]) -> None:
    request.session[SESSION_KEY] = stories[-MAX_STORIES:]
    if not request.user.is_authenticated:
        request.session.set_expiry(ANONYMOUS_SESSION_SECONDS)


def _story(request: HttpRequest, number: int) -> dict:
    for story in _stories(request):
        if story["id"] == number:
            return story
    raise Http404("no such story")


def editor(request: HttpRequest) -> HttpResponse:
    """The start page: a new story."""
    error, title, body = "", "", ""
    if request.method == "POST":
        title, body = request.POST.get("title", "").strip(), request.POST.get("body", "").strip()
        if not title or not body:
            error = "A story needs a title and some text."
        else:
            stories = _stories(request)
            story = {
                "id": max([s["id"] for s in stories] + [0]) + 1,
                "title": title[:MAX_TITLE],
                "body": body[:MAX_BODY],
                "published": False,
            }
            _save(request, [*stories, story])
            return redirect("demo_site_story", number=story["id"])
    return render(
        request, "demo_site/editor.html", {"error": error, "title": title, "body": body}, status=400 if error else 200
    )


def stories(request: HttpRequest) -> HttpResponse:
    mine = _stories(request)
    drafts = [s for s in reversed(mine) if not s["published"]]
    published = [s for s in reversed(mine) if s["published"]]
    return render(request, "demo_site/stories.html", {"drafts": drafts, "published": published})


def story(request: HttpRequest, number: int) -> HttpResponse:
    return render(request, "demo_site/story.html", {"story": _story(request, number)})


@require_POST
def publish(request: HttpRequest, number: int) -> HttpResponse:
    _story(request, number)["published"] = True
    _save(request, _stories(request))
    return redirect("demo_site_public", number=number)


def public(request: HttpRequest, number: int) -> HttpResponse:
    story = _story(request, number)
    if not story["published"]:
        raise Http404("not published")
    return render(request, "demo_site/public.html", {"story": story})
