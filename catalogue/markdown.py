"""Recipe prompts as HTML that is safe to put in a page.

markdown-it-py with raw HTML off (a `<script>` in a prompt is shown as text), links limited to
http(s), mailto and relative targets (no `javascript:`, `data:` or `file:`), and every link marked
`rel="nofollow noopener noreferrer"`. Images are shown as their alt text: a prompt is no place for
a tracking pixel.
"""

from __future__ import annotations

import re

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_SCHEME = re.compile(r"\s*([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
_ALLOWED_SCHEMES = {"http", "https", "mailto"}
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


def render_markdown(text: str) -> SafeString:
    return mark_safe(_MD.render(text or ""))  # noqa: S308 - html is off, links are checked
