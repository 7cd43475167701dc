"""Serve this machine's own figures at http://HOST:PORT/metrics, for a machine that runs only
workers (scale-out): what its processes observed (model and tool latency, retries), with the
same token and allow-list as /metrics. The database's figures are the web's /metrics' alone, so
they are never counted twice (docs: Metrics)."""

from wsgiref.simple_server import WSGIRequestHandler, make_server

from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.core.management.base import BaseCommand, CommandError

from ops import metrics as figures

REASONS = {200: "OK", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed"}


def app(environ, start_response):
    request = WSGIRequest(environ)
    status, headers, body = 200, [], b""
    if request.path != "/metrics":
        status = 404
    elif request.method != "GET":
        status = 405
    else:
        status = figures.refusal(request) or 200
    if status == 401:
        headers.append(("WWW-Authenticate", "Bearer"))
    if status == 200:
        body, content_type = figures.exposition(request.headers.get("Accept", ""), database=False)
        headers.append(("Content-Type", content_type))
    start_response(f"{status} {REASONS[status]}", [*headers, ("Cache-Control", "no-store")])
    return [body]


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # every scrape would print a line
        pass


class Command(BaseCommand):
    help = "Serve this machine's processes' figures at /metrics (a worker-only machine; docs: Metrics)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, required=True)
        parser.add_argument("--host", default="0.0.0.0")

    def handle(self, *args, **options):
        if not settings.RYSH_METRICS:
            raise CommandError("metrics are off: set RYSH_METRICS=true (and the same RYSH_METRICS_DIR as the workers)")
        with make_server(options["host"], options["port"], app, handler_class=QuietHandler) as server:
            self.stdout.write(
                f"serving {settings.RYSH_METRICS_DIR} at http://{options['host']}:{options['port']}/metrics"
            )
            self.stdout.flush()
            server.serve_forever()
