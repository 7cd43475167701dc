"""Tiny Press: a toy publishing site the dashboard serves for the offline web demo.

Public on purpose (no login): it is the page the demo's agent drives in a real browser,
like Medium for the seeds' publishing recipe — write a story, save it as a draft, publish
the draft. A visitor's stories live in their own browser, in one signed cookie (the browser
profile keeps it, so a draft saved in one pass is still there in the next): the server keeps
nothing for a visitor, so no number of anonymous posts can grow the database.

Mounted only while the demo is on (RYSH_DEMO_SITE), and bounded: the cookie holds at most
MAX_COOKIE_BYTES (the oldest stories go first, a story too long to fit alone is refused) and at
most MAX_STORIES stories, and lasts a day.
"""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

COOKIE = "tiny_press"
COOKIE_SALT = "demo_site.stories"
MAX_COOKIE_BYTES = 3800  # browsers keep 4096 bytes per cookie, name and attributes included
MAX_STORIES = 20
MAX_TITLE = 200
MAX_BODY = 20_000  # cut before packing; what fits the cookie decides
VISITOR_SECONDS = 24 * 3600
TOO_LONG = (
    "This story is too long for Tiny Press: a demo site keeps a visitor's stories in their "
    f"browser, about {MAX_COOKIE_BYTES // 1000} KB in all."
)


def _stories(request: HttpRequest) -> list[dict]:
    """The visitor's stories from their cookie; none when it is missing, forged or a day old."""
    try:
        stories = signing.loads(request.COOKIES.get(COOKIE, ""), salt=COOKIE_SALT, max_age=VISITOR_SECONDS)
    except signing.BadSignature:
        return []
    return stories if isinstance(stories, list) else []


def _packed(stories: list[dict]) -> tuple[str, list[dict]]:
    """The newest stories that fit the cookie, signed and compressed, and which they are."""
    kept = stories[-MAX_STORIES:]
    while kept:
        value = signing.dumps(kept, salt=COOKIE_SALT, compress=True)
        if len(value) <= MAX_COOKIE_BYTES:
            return value, kept
        kept = kept[1:]  # the oldest go first
    return "", []


def _saved(response: HttpResponse, value: str) -> HttpResponse:
    response.set_cookie(
        COOKIE,
        value,
        max_age=VISITOR_SECONDS,
        path=reverse("demo_site_editor"),
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
    return response


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
            value, kept = _packed([*stories, story])
            if story in kept:
                return _saved(redirect("demo_site_story", number=story["id"]), value)
            error = TOO_LONG
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
    stories = _stories(request)
    for story in stories:
        if story["id"] == number:
            story["published"] = True
            value, _kept = _packed(stories)
            return _saved(redirect("demo_site_public", number=number), value)
    raise Http404("no such story")


def public(request: HttpRequest, number: int) -> HttpResponse:
    story = _story(request, number)
    if not story["published"]:
        raise Http404("not published")
    return render(request, "demo_site/public.html", {"story": story})
