"""Operating it (docs: Operating it): the probes, public, no session, small fixed answers."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ops import health


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers: no database, no broker, nothing else asked."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Database reachable and migrated, broker reachable, a worker cluster seen lately, the recipes
    repository readable: 200 when all are "ok", else 503 naming the failing ones."""
    checks = health.readiness()
    ready = all(answer == "ok" for answer in checks.values())
    return JsonResponse({"status": "ready" if ready else "not ready", "checks": checks}, status=200 if ready else 503)
