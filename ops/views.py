"""Operating it (docs: Operating it, Metrics): the probes, public, no session, small fixed answers;
the Prometheus scrape, no session either but a bearer token and/or an allow-list of addresses."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ops import health
from ops import metrics as figures


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


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus scrape: 404 unless RYSH_METRICS=true; 403 outside RYSH_METRICS_ALLOW, 401
    without RYSH_METRICS_TOKEN, with no detail either way."""
    if not settings.RYSH_METRICS:
        raise Http404
    status = figures.refusal(request)
    if status is not None:
        answer = HttpResponse(status=status)
        if status == 401:
            answer["WWW-Authenticate"] = "Bearer"
        return answer
    body, content_type = figures.exposition(request.headers.get("Accept", ""))
    return HttpResponse(body, content_type=content_type)
