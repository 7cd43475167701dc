"""A worker's size (docs/benchmarks/engine.md, "Process size"): with traces and metrics off, a
process of the app never loads the OpenTelemetry SDK or prometheus_client; with them on, it loads
them when it first traces or observes (and django_q gets its prometheus_client back)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.e2e.stack import ROOT

WORKER = """
import json, sys
import django
django.setup()
import runs.worker, runs.engine, runs.engine.tools, runs.events, agents.anthropic_model, django_q.cluster
from django_q import conf
from rysh_site import metrics, tracing
# every hook a worker calls, off: no-ops that load nothing
with metrics.model_call("claude-sonnet-4-5", "task"):
    pass
metrics.model_retry("claude-sonnet-4-5", "task")
with metrics.tool_call("save_result"):
    pass
metrics.push_sent((0.0, "tail"))
tracing.model_retry(1, "overloaded")
tracing.flush()
assert tracing.child_context({}) == {}
ON = sys.argv[1] == "on"
if ON:
    tracing._tracer()
print(json.dumps({
    "sdk": "opentelemetry.sdk" in sys.modules,
    "prometheus": "prometheus_client" in sys.modules,
    "django_q_prometheus": conf.prometheus_multiprocess is not None,
    "traces": tracing.enabled(),
    "metrics": metrics.enabled(),
}))
"""

SWITCHES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "RYSH_METRICS",
    "RYSH_METRICS_TOKEN",
    "RYSH_METRICS_DIR",
    "PROMETHEUS_MULTIPROC_DIR",
)


def _loaded(tmp_path, side: str, **switches: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env.update(DJANGO_SETTINGS_MODULE="rysh_site.settings", RYSH_DATA_DIR=str(tmp_path / "data"), **switches)
    done = subprocess.run(
        [sys.executable, "-c", WORKER, side], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_with_traces_and_metrics_off_a_worker_loads_neither_sdk(tmp_path):
    assert _loaded(tmp_path, "off") == {
        "sdk": False,
        "prometheus": False,
        "django_q_prometheus": False,
        "traces": False,
        "metrics": False,
    }


def test_with_them_on_the_sdks_load_when_first_used(tmp_path):
    shared = tmp_path / "metrics"
    found = _loaded(
        tmp_path,
        "on",
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",
        RYSH_METRICS="true",
        RYSH_METRICS_TOKEN="scrape-me",
        RYSH_METRICS_DIR=str(shared),
    )
    assert found == {"sdk": True, "prometheus": True, "django_q_prometheus": True, "traces": True, "metrics": True}
    assert list(shared.glob("histogram_*.db"))  # the model call observed into this process's file


IDLE_WORKER = """
import json, sys
import django
django.setup()
from django.core.management import get_commands, load_command_class
import runs.worker, runs.engine, runs.engine.tools, runs.events, django_q.cluster
app = get_commands()["qcluster"]
command = load_command_class(app, "qcluster")
command.check()  # what `manage.py qcluster` runs before it forks its workers
from django.core.checks.registry import registry
print(json.dumps({
    "qcluster": app,
    "runserver": get_commands()["runserver"],
    "url_checks_back": any("urls" in c.tags for c in registry.registered_checks),
    "loaded": sorted(m for m in sys.argv[1:] if m in sys.modules),
}))
"""

# what a worker kept out, and what loads it where it is needed
KEPT_OUT = (
    "ninja",  # the API (api/urls.py, api/views): loaded with the URLconf, by the web process
    "api.urls",
    "api.views",
    "daphne.server",  # and Twisted, autobahn, pyOpenSSL: the web process's server
    "twisted",
    "OpenSSL",
    "requests",  # and mozilla_django_oidc: the company login's client (accounts/oidc.py)
    "mozilla_django_oidc",
    "anthropic",  # a run's first Claude call (agents/providers.py)
    "pydantic",
)


def test_an_idle_worker_loads_neither_the_api_nor_the_web_server_nor_the_model_sdk(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env.update(DJANGO_SETTINGS_MODULE="rysh_site.settings", RYSH_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-c", IDLE_WORKER, *KEPT_OUT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {
        "qcluster": "rysh_site.worker_app",
        "runserver": "daphne",
        "url_checks_back": True,
        "loaded": [],
    }


def test_the_url_checks_still_run_everywhere_but_the_worker(tmp_path):
    """`manage.py check` still imports and checks the URLconf, and so loads the API."""
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env.update(DJANGO_SETTINGS_MODULE="rysh_site.settings", RYSH_DATA_DIR=str(tmp_path / "data"))
    script = (
        "import sys, django; django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('check')\n"
        "print('ninja' in sys.modules, 'api.views' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "True True"
