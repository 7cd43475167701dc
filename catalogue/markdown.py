"""Recipe prompts as HTML that is safe to put in a page.

markdown-it-py with raw HTML off (a `<script>` in a prompt is shown as text), links limited to
http(s), mailto and relative targets (no `javascript:`, `data:` or `file:`), and every link marked
`rel="nofollow noopener noreferrer"`. Images are shown as their alt text: a prompt is no place for
a tracking pixel. Input is capped at MAX_MARKDOWN_CHARS: the rest is cut, and the page says so.
"""

from __future__ import annotations

import re

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_SCHEME = re.compile(r"\s*([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
_ALLOWED_SCHEMES = {"http", "https", "mailto"}
# The same size as a recipe's cap (catalogue.recipe.MAX_RECIPE_BYTES): rendering stays cheap.
MAX_MARKDOWN_CHARS = 256 * 1024
_INVISIBLE = re.compile(r"[\x00-\x20\x7f]|%[01][0-9a-f]|%20|%7f", re.IGNORECASE)


def _validate_link(url: str) -> bool:
    """A link with a scheme must be http(s) or mailto; one without is relative (same site)."""
    # browsers drop tabs and newlines inside a scheme ("java\nscript:"); so do we, before looking
    scheme = _SCHEME.match(_INVISIBLE.sub("", url))
    return scheme is None or scheme[1].lower() in _ALLOWED_SCHEMES


def _link_open(self, tokens, idx, options, env):
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return self.renderToken(tokens, idx, options, env)


def _image(self, tokens, idx, options, env):
    return self.renderInline(tokens[idx].children or [], options, env)


def _build() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = _validate_link
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    return md


_MD = _build()


def render_markdown(text: str, *, limit: int = MAX_MARKDOWN_CHARS) -> SafeString:
    text = text or ""
    if len(text) <= limit:
        return mark_safe(_MD.render(text))  # noqa: S308 - html is off, links are checked
    shown = text[:limit]
    cut = text.rfind("\n", 0, limit)  # cut at a line end when there is one
    if cut > limit // 2:
        shown = text[:cut]
    note = format_html(
        '<p class="markdown-cut"><em>Cut: the text is {} characters long; only the first {} are shown.</em></p>',
        f"{len(text):,}",
        f"{len(shown):,}",
    )
    return mark_safe(_MD.render(shown) + note)  # noqa: S308 - html is off, links are checked; note is escaped
