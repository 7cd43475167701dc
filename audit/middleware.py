"""Sets the audit context of each web request: source `web`, the client's address (REMOTE_ADDR,
or X-Forwarded-For read through the proxies listed in RYSH_TRUSTED_PROXIES: rysh_site/proxies.py)
and the logged-in user (so an action recorded deep in a service knows who and from where)."""

from __future__ import annotations

from audit.context import WEB, audit_context
from rysh_site.proxies import client_address


class AuditContextMiddleware:
    """Goes after AuthenticationMiddleware: it hands on `request.user` (lazy, read only when a
    row is written)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with audit_context(source=WEB, address=client_address(request), user=getattr(request, "user", None)):
            return self.get_response(request)
