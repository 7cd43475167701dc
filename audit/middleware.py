"""Sets the audit context of each web request: source `web`, the client's address and the
logged-in user (so an action recorded deep in a service knows who and from where)."""

from __future__ import annotations

import ipaddress

from audit.context import WEB, audit_context


class AuditContextMiddleware:
    """Goes after AuthenticationMiddleware: it hands on `request.user` (lazy, read only when a
    row is written)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with audit_context(source=WEB, address=client_address(request), user=getattr(request, "user", None)):
            return self.get_response(request)


def client_address(request) -> str | None:
    """REMOTE_ADDR only: X-Forwarded-For is whatever the client chose to send. Behind a proxy
    this is the proxy's address (as for the login throttle)."""
    raw = request.META.get("REMOTE_ADDR") or ""
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return None
