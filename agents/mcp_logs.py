"""URLs in the MCP client's log lines (docs/mcp.md): a server's URL may carry its key in the
query (`…/mcp?key=…`) or a user part. Pages and the audit log mask them; so must every line the
HTTP client and the SDK log about a request, and every error that quotes the URL.
"""

from __future__ import annotations

import logging
import re

MASK = "••••"

_URL_SECRETS_RE = re.compile(
    r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<user>[^\s/@?#'\"<>]*@)?(?P<rest>[^\s?#'\"<>]*)(?P<query>\?[^\s#'\"<>]*)?",
    re.IGNORECASE,
)
CLIENT_LOGGERS = ("httpx", "httpx2", "mcp.client.streamable_http", "mcp.client.sse", "mcp.shared._httpx_utils")


def redact_urls(text: str) -> str:
    """Every URL in `text` with its query and user part masked."""

    def masked(found: re.Match) -> str:
        user = f"{MASK}@" if found["user"] else ""
        query = f"?{MASK}" if found["query"] else ""
        return f"{found['scheme']}{user}{found['rest']}{query}"

    return _URL_SECRETS_RE.sub(masked, text)


class RedactUrls(logging.Filter):
    """A record whose message holds a URL's query or user part is rewritten masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_urls(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True


_REDACT = RedactUrls()


def redact_client_logs() -> None:
    """Mask URL secrets in the HTTP client's and the SDK's log lines (the toolservers app
    calls it when Django starts: the worker, the web server and the CLI alike)."""
    for name in CLIENT_LOGGERS:
        logger = logging.getLogger(name)
        if _REDACT not in logger.filters:
            logger.addFilter(_REDACT)
