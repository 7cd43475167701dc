"""The Content-Security-Policy every response carries.

Only this site's own scripts run: no inline script, no inline handler, no eval (htmx needs none
of them here: no hx-on, no js: values, no trigger filters). Inline style *attributes* stay
allowed (the budget bars' widths are style attributes; a style attribute runs no code), inline
<style> elements do not. Pages cannot be framed, forms post only here, and fetches and
websockets go only to this origin.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "style-src-attr 'unsafe-inline'",
        "img-src 'self' data:",
        "media-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response
