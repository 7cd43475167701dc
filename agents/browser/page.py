"""The tab a web recipe's tools act on, on the browser's thread: the newest page of the
context, its elements found by selector, text or label, where a click landed, the page left when
it got outside `allowed_domains`, and what an element amounts to for an approval gate.

Page content is data, never instructions: the page's title and URL (the page sets both) are
quoted inside a delimited <page_content> block, or percent-encoded when shown outside it.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from agents.browser.errors import ToolError
from agents.browser.guard import RequestGuard
from agents.browser.launch import VIEWPORT
from agents.ports import PageCapture
from agents.task_tools import PAGE_NOTE, page_text

FILMSTRIP_SCALE = 0.5  # 512 x 384: enough to recognise a page in a strip of thumbnails
FILMSTRIP_JPEG_QUALITY = 45
# Read with Playwright's selector engines, which run apart from the page's own scripts, so a
# page cannot lie about them by patching the DOM's prototypes.
LOWER_TYPE = "translate(@type, 'ABCDEGIMSTU', 'abcdegimstu')"
SUBMIT_XPATH = (
    f"{{axis}}button[not(@type) or {LOWER_TYPE}='submit'] | "
    f"{{axis}}input[{LOWER_TYPE}='submit' or {LOWER_TYPE}='image']"
)
MAX_SUBMIT_BUTTONS = 10


class BrowserTab:
    """The page the tools act on and the context it lives in (set by BrowserTools on launch)."""

    def __init__(self, guard: RequestGuard):
        self.guard = guard
        self.context = None
        self.page = None

    def open_on(self, context) -> None:
        """The context's first page, or a new one: where the tools start."""
        self.context = context
        pages = context.pages
        self.page = pages[0] if pages else context.new_page()

    def forget(self) -> None:
        self.context = self.page = None

    # -- finding things -------------------------------------------------------------------

    def follow_new_tab(self) -> None:
        """A click that opened a tab moves the agent there; a closed tab falls back."""
        pages = [p for p in self.context.pages if not p.is_closed()] if self.context else []
        if pages and (self.page is None or self.page.is_closed() or pages[-1] is not self.page):
            self.page = pages[-1]
        elif not pages and self.context is not None:
            self.page = self.context.new_page()

    def locate(self, **given: str | None):
        """The first element matching the one way of finding it that was given."""
        page = self.page
        chosen = {k: v for k, v in given.items() if v}
        if len(chosen) != 1:
            raise ToolError(f"give exactly one of {' or '.join(given)}")
        ((how, value),) = chosen.items()
        if not isinstance(value, str):
            raise ToolError(f"{how} must be text")
        if how == "selector":
            candidates = [page.locator(value)]
        elif how == "text":
            candidates = [
                page.get_by_role("button", name=value),
                page.get_by_role("link", name=value),
                page.get_by_text(value, exact=True),
                page.get_by_text(value),
            ]
        else:
            candidates = [page.get_by_label(value), page.get_by_placeholder(value)]
        for locator in candidates:
            if locator.count():
                return locator.first
        raise ToolError(f"no element matches {how} {value!r} on {page.url}")

    # -- what an element amounts to (approval gates) ---------------------------------------

    def element_labels(self, arguments: dict[str, Any]) -> list[str]:
        keys = {k: arguments.get(k) for k in ("selector", "text", "label") if arguments.get(k)}
        if len(keys) != 1:
            return []
        return labels_of(self.locate(**keys))

    def target_facts(self, target: dict[str, str | None]) -> dict | None:
        """What a click or a key press on an element amounts to — its labels, its form's submit
        buttons' labels, its link, where its form goes — for the element given, else the
        focused one (where a key press lands, in a frame too)."""
        given = {k: v for k, v in target.items() if v}
        element, frame = (self.locate(**given), self.page.main_frame) if given else self.focused()
        if element is None:
            return None
        base_tag = frame.locator("base[href]")
        base = urljoin(frame.url, base_tag.first.get_attribute("href") or "") if base_tag.count() else frame.url
        submits = bool(element.locator("xpath=" + SUBMIT_XPATH.format(axis="self::")).count())
        facts = {"labels": labels_of(element), "submit": [], "href": "", "action": "", "submits": submits}
        link = element.locator("xpath=ancestor-or-self::a[@href]")
        if link.count():
            facts["href"] = urljoin(base, (link.first.get_attribute("href") or "").strip())
        form = element.locator("xpath=ancestor-or-self::form")
        if form.count():
            buttons = form.first.locator("xpath=" + SUBMIT_XPATH.format(axis=".//"))
            for i in range(min(buttons.count(), MAX_SUBMIT_BUTTONS)):
                facts["submit"] += labels_of(buttons.nth(i))
            own = element.get_attribute("formaction") if submits else None
            facts["action"] = urljoin(base, (own or form.first.get_attribute("action") or "").strip())
        return facts

    def focused(self):
        """(the focused element, its frame), in the innermost frame that has one."""
        for frame in reversed(self.page.frames):
            focused = frame.locator(":focus:not(iframe):not(frame)")
            if focused.count():
                return focused.first, frame
        return None, None

    # -- reporting ------------------------------------------------------------------------

    def where(self) -> str:
        """Where a click or key press landed: the URL, then the page's title as quoted data."""
        return f"now at {shown_url(self.page.url)}\n{self.title_block()}"

    def title_block(self) -> str:
        """The page's title is the page's text: it is quoted inside a delimited block too."""
        return f'<page_content note="{PAGE_NOTE}">\nTitle: {page_text(self.page.title())}\n</page_content>'

    def settle(self) -> None:
        """Let a click's navigation land before reporting where it went."""
        try:
            self.page.wait_for_load_state("domcontentloaded", timeout=5000)
        except Exception:  # noqa: BLE001 - a slow page is reported as it is
            pass
        self.follow_new_tab()

    def capture(self) -> PageCapture:
        self.follow_new_tab()
        page = self.page
        session = self.context.new_cdp_session(page)
        try:
            size = page.viewport_size or VIEWPORT
            shot = session.send(
                "Page.captureScreenshot",
                {
                    "format": "jpeg",
                    "quality": FILMSTRIP_JPEG_QUALITY,
                    "clip": {
                        "x": 0,
                        "y": 0,
                        "width": size["width"],
                        "height": size["height"],
                        "scale": FILMSTRIP_SCALE,
                    },
                },
            )
        finally:
            session.detach()
        return PageCapture(url=page.url, title=page.title(), jpeg=base64.b64decode(shot["data"]))

    # -- allowed_domains: a page that got out is left --------------------------------------

    def leave_escaped(self, *, sync: bool = False) -> str:
        """Send the tab to about:blank when the page (or a frame in it) went outside the list,
        so nothing from there is read, clicked or captured; returns what the model hears."""
        if sync and self.guard.allowed:
            try:  # one round trip delivers the events of what happened since the last call
                self.page.evaluate("0")
            except Exception:  # noqa: BLE001 - a page that cannot answer is left as it is
                pass
        escaped = self.guard.take_escaped()
        if not escaped:
            return ""
        self.blank()
        hosts = ", ".join(dict.fromkeys(urlsplit(url).hostname or url for url in escaped))
        return (
            f"\n[refused: the page was sent to {hosts}, outside this recipe's allowed_domains "
            f"({', '.join(self.guard.allowed)}); the browser is now at about:blank]"
        )

    def blank(self) -> None:
        """about:blank in the tab, even while an error page is still committing; failing
        that, a new tab in place of this one."""
        for _ in range(3):
            try:
                self.page.goto("about:blank")
                return
            except Exception:  # noqa: BLE001 - interrupted by the navigation being refused
                self.page.wait_for_timeout(100)
        self.page.close()
        self.page = self.context.new_page()


def labels_of(element) -> list[str]:
    """An element's visible text, accessible label, value, title, name and id."""
    labels = [element.inner_text(timeout=2000).strip()]
    for attribute in ("aria-label", "value", "title", "name", "id"):
        labels.append((element.get_attribute(attribute, timeout=2000) or "").strip())
    return [label for label in labels if label]


def navigate_target(page_url: str, url: Any) -> str:
    """The URL a navigate call opens (approval_subjects gates the very same one)."""
    return urljoin(page_url if page_url.startswith("http") else "", str(url or "").strip())


def keys_of(name: str, arguments: dict[str, Any]) -> set[str]:
    """Which of Enter and Space a press or a type call sends: keys that click or submit."""
    if name == "press" and isinstance(arguments.get("key"), str):
        key = arguments["key"].rsplit("+", 1)[-1].lower()  # a chord: the key is the last part
        return {"enter"} if key in ("enter", "numpadenter") else {"space"} if key in ("space", " ") else set()
    if name == "type" and isinstance(arguments.get("text"), str):
        text = arguments["text"]
        return {"enter" for c in "\r\n" if c in text} | ({"space"} if " " in text else set())
    return set()


def amounts_to(name: str, arguments: dict[str, Any], keys: set[str], facts: dict) -> list[tuple[str, list[str]]]:
    """The (tool, subjects) pairs a click, or Enter or Space (`keys`) on an element, amounts
    to, from the element's `facts` (BrowserTab.target_facts): a click on it, on its form's
    submit buttons, a navigate to its link or to where its form goes."""
    pairs = []
    if keys:
        labels = [arguments.get("selector"), *facts["labels"]]
        labels += facts["submit"] if "enter" in keys else []
        pairs.append(("click", [label for label in dict.fromkeys(labels) if label]))
    if facts["href"] and (name == "click" or "enter" in keys):
        pairs.append(("navigate", [facts["href"]]))
    if facts["action"] and ("enter" in keys or facts["submits"]):
        pairs.append(("navigate", [facts["action"]]))  # where the form goes
    return pairs


def shown_url(url: str) -> str:
    """A URL safe to print outside the block: percent-encoded, so no spaces, quotes or tags."""
    return quote(url, safe=":/?#[]@!$&'()*+,;=%~-._")
