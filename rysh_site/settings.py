"""All settings, read from the environment with strict helpers (rysh_site/env.py).

Embedded default: SQLite in WAL mode, django-q2's ORM broker. DATABASE_URL
switches to PostgreSQL and REDIS_URL to the Redis broker and channel layer.
"""

from __future__ import annotations

import re
import secrets
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from rysh_site import login_env, metrics_env, settings_setup
from rysh_site.env import envbool, envchoice, envhosts, envint, envnetworks, envstr
from rysh_site.security import private_dir, restrict_umask
from rysh_site.startup import BASE_DIR, data_dir, one_line_configuration_errors

# A malformed setting below stops the process with one line naming it, not a traceback.
one_line_configuration_errors()
# First, before anything is written: files 0600 and folders 0700 for this process and its
# children (the database and its WAL/SHM, the secret key, results, screenshots; security.py).
restrict_umask()

DATA_DIR = private_dir(data_dir())


def _secret_key() -> str:
    """From SECRET_KEY, else one generated once and kept (mode 0600) in the data directory."""
    if key := envstr("SECRET_KEY"):
        return key
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = envbool("DEBUG", False)
ALLOWED_HOSTS = [h for h in envstr("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in envstr("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "rysh_site.server_app.ServerConfig",  # daphne's runserver, without its server in every process
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",  # login throttling (rysh_site/throttle.py); before the apps, so its receivers run first
    "django_htmx",
    "rysh_site.worker_app.WorkerConfig",  # qcluster without the URLconf's checks: a worker loads no views
    "rysh_site.queue_app.QueueConfig",  # django_q, without prometheus_client when metrics are off
    "channels",
    # the apps, one per domain; budgets/ is pure Python and not an app (see DESIGN.md)
    "catalogue",
    "reviews",
    "runs",
    "schedules",
    "notify",
    "audit",
    "spend",
    "agents",
    "demo_site",
    "workspaces",
    # the REST API and its tokens (api/); ninja's files serve the API docs' Swagger UI (no CDN),
    # installed without importing ninja: only the URLconf loads the API (rysh_site/ninja_app)
    "rysh_site.ninja_app.NinjaFilesConfig",
    "api",
    "toolservers",  # MCP servers a team registers; their tools for recipes (docs/mcp.md)
    "accounts",  # company login (OpenID Connect) and the local-login switch: docs/login.md
    "policies",  # a team's policy file and the organisation's policy (docs/policy.md)
    "evals",  # a recipe's tests: eval cases, suites, the review gate (docs/evals.md)
    "ops",  # operating it: health probes, metrics, traces, retention (docs/operations.md)
    "cli",  # the `auto` command, one module of verbs per domain (docs/command-line.md)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "rysh_site.headers.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "audit.middleware.AuditContextMiddleware",  # who and from where, for audit rows
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # turns a refused login into rysh_site.throttle.lockout_response
]

ROOT_URLCONF = "rysh_site.urls"
ASGI_APPLICATION = "rysh_site.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "runs.context_processors.approvals_waiting",
                "rysh_site.context_processors.roles",
            ],
        },
    },
]

DATABASE_URL = envstr("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "db.sqlite3",
            "OPTIONS": {
                # WAL lets the web server read while a worker writes; IMMEDIATE takes the
                # write lock at BEGIN so two writers queue instead of failing mid-transaction.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
            # A connection is kept for a minute, as with PostgreSQL: opened afresh, SQLite reads
            # the whole schema again at its first query, which was a third of a live push's render.
            "CONN_MAX_AGE": 60,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = envstr("REDIS_URL")
Q_CLUSTER = {
    "name": "rysh",
    "workers": envint("RYSH_WORKERS", 2, minimum=1),
    # A pass holds a worker for its whole length; the engine keeps its own clocks,
    # so django-q2's timeout is only a backstop, and retry must exceed it.
    "timeout": envint("RYSH_TASK_TIMEOUT", 6 * 3600, minimum=60),
    "retry": envint("RYSH_TASK_TIMEOUT", 6 * 3600, minimum=60) + 600,
    "max_attempts": 1,
    "catch_up": False,  # docs/schedules.md: no backfill of missed ticks
    "save_limit": 1000,
    "label": "Tasks",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
    Q_CLUSTER["broker_class"] = "ops.health.RedisBroker"
else:
    Q_CLUSTER["orm"] = "default"
    Q_CLUSTER["broker_class"] = "ops.health.OrmBroker"
# /readyz wants a worker cluster seen within this many seconds; a cluster's leader writes its
# heartbeat row every quarter of it (ops/health.py). Web and workers should agree on it.
RYSH_READY_WORKER_SECONDS = envint("RYSH_READY_WORKER_SECONDS", 60, minimum=2)

# Prometheus metrics at /metrics (docs: Metrics): off unless RYSH_METRICS=true, then behind a bearer
# token and/or an allow-list of addresses (at least one of them). The web and worker processes of a
# machine share RYSH_METRICS_DIR (prometheus_client's multiprocess mode), exported here as
# PROMETHEUS_MULTIPROC_DIR before anything imports prometheus_client (rysh_site/metrics.py).
RYSH_METRICS = envbool("RYSH_METRICS", False)
RYSH_METRICS_TOKEN = envstr("RYSH_METRICS_TOKEN")
RYSH_METRICS_ALLOW = envnetworks("RYSH_METRICS_ALLOW")
RYSH_METRICS_DIR = Path(envstr("RYSH_METRICS_DIR", str(DATA_DIR / "metrics"))).resolve()
if RYSH_METRICS:
    metrics_env.require_guard(RYSH_METRICS_TOKEN, RYSH_METRICS_ALLOW)
    metrics_env.share_dir(RYSH_METRICS_DIR)

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    # In-process pushes (a control clicked in this web server) arrive at once; changes made by
    # workers in other processes reach the sockets through the live hub's tail of the RunEvent
    # log, one per web process (runs/live/hub.py).
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# The live hub tails the RunEvent log, once per web process (needed when no Redis carries
# workers' pushes). Writers wake it when they commit: a datagram to each web process's socket in
# RYSH_LIVE_WAKE_DIR (runs/live/wake.py), so it reads the log at once; the tick,
# RYSH_LIVE_POLL_MS apart, is only a safety net for a wake-up lost (docs/benchmarks/live.md).
RYSH_LIVE_TAIL = envbool("RYSH_LIVE_TAIL", not REDIS_URL)
RYSH_LIVE_POLL_MS = envint("RYSH_LIVE_POLL_MS", 1000, minimum=20)
RYSH_LIVE_WAKE_DIR = Path(envstr("RYSH_LIVE_WAKE_DIR", str(DATA_DIR / "live"))).resolve()
# An open websocket checks its session, its user's active flag and roles this often (and at once
# when a web process records a logout or a role change): a session that ended closes it, other
# roles change what it is sent (runs/live/consumers.py).
RYSH_WS_RECHECK_SECONDS = envint("RYSH_WS_RECHECK_SECONDS", 10, minimum=1)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# Login throttling (rysh_site/throttle.py, django-axes): this many failures within the window lock
# out the client address, and the username — except from an address that has logged in as that
# user before, where only that address's own failures count. Counted in the database.
RYSH_LOGIN_MAX_FAILURES = envint("RYSH_LOGIN_MAX_FAILURES", 5, minimum=1)
RYSH_LOGIN_LOCKOUT_MINUTES = envint("RYSH_LOGIN_LOCKOUT_MINUTES", 15, minimum=1)
# The REST API (api/): calls one token may make per minute (counted in the database, so every
# web process shares the count); one more gets 429 with Retry-After
RYSH_API_RATE_PER_MINUTE = envint("RYSH_API_RATE_PER_MINUTE", 120, minimum=1)
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: a locked-out attempt never reaches the password check
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = "rysh_site.throttle.failure_limit"  # RYSH_LOGIN_MAX_FAILURES, read per attempt
AXES_COOLOFF_TIME = "rysh_site.throttle.cool_off"  # RYSH_LOGIN_LOCKOUT_MINUTES, read per attempt
AXES_LOCKOUT_PARAMETERS = "rysh_site.throttle.lockout_parameters"
AXES_CLIENT_IP_CALLABLE = "rysh_site.proxies.client_address"
AXES_HANDLER = "rysh_site.throttle.LoginAttempts"
AXES_LOCKOUT_CALLABLE = "rysh_site.throttle.lockout_response"
AXES_RESET_ON_SUCCESS = True  # the failures against that username (LoginAttempts)
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # hammering on a lock does not extend it
# The proxies in front of the dashboard (addresses or CIDR networks, comma-separated): only a
# connection from one of them has its X-Forwarded-For read, for the login throttle and the audit
# log's address (rysh_site/proxies.py). Empty: the address is REMOTE_ADDR, whatever a client sends.
RYSH_TRUSTED_PROXIES = envnetworks("RYSH_TRUSTED_PROXIES")

# -- company login (OpenID Connect: accounts/, docs/login.md) --------------------------------------
# Off unless RYSH_OIDC_ISSUER is set: then the login page offers "Log in with RYSH_OIDC_NAME", the
# provider's endpoints come from its discovery document (read when the web server starts: a wrong
# issuer stops it there, never a 500 at login), and each login sets the roles RYSH_OIDC_ROLE_MAP
# maps the person's groups to. RYSH_LOCAL_LOGIN=false leaves passwords to RYSH_BREAK_GLASS_USERS.
RYSH_OIDC_ISSUER = login_env.issuer_url("RYSH_OIDC_ISSUER")
RYSH_OIDC_CLIENT_ID = envstr("RYSH_OIDC_CLIENT_ID")
RYSH_OIDC_CLIENT_SECRET = envstr("RYSH_OIDC_CLIENT_SECRET")
RYSH_OIDC_NAME = envstr("RYSH_OIDC_NAME", "single sign-on")  # "Log in with <this>"
RYSH_OIDC_SCOPES = envstr("RYSH_OIDC_SCOPES", "openid email profile")
RYSH_OIDC_USERNAME_CLAIM = envstr("RYSH_OIDC_USERNAME_CLAIM", "preferred_username")
RYSH_OIDC_GROUPS_CLAIM = envstr("RYSH_OIDC_GROUPS_CLAIM", "groups")
RYSH_OIDC_ROLE_MAP = login_env.role_map("RYSH_OIDC_ROLE_MAP")
RYSH_OIDC_TIMEOUT = envint("RYSH_OIDC_TIMEOUT", 10, minimum=1)  # seconds per call to the provider
RYSH_LOCAL_LOGIN = envbool("RYSH_LOCAL_LOGIN", True)
RYSH_BREAK_GLASS_USERS = login_env.usernames("RYSH_BREAK_GLASS_USERS")
if RYSH_OIDC_ISSUER:
    login_env.require_all(
        {"RYSH_OIDC_CLIENT_ID": RYSH_OIDC_CLIENT_ID, "RYSH_OIDC_CLIENT_SECRET": RYSH_OIDC_CLIENT_SECRET},
        "RYSH_OIDC_ISSUER is set",
    )
    if "openid" not in RYSH_OIDC_SCOPES.split():
        raise ImproperlyConfigured(f"RYSH_OIDC_SCOPES: expected openid among the scopes, got {RYSH_OIDC_SCOPES!r}")
    AUTHENTICATION_BACKENDS.append("accounts.backends.OIDCBackend")
elif RYSH_OIDC_CLIENT_ID or RYSH_OIDC_ROLE_MAP or not RYSH_LOCAL_LOGIN:
    raise ImproperlyConfigured(
        "RYSH_OIDC_CLIENT_ID, RYSH_OIDC_ROLE_MAP or RYSH_LOCAL_LOGIN=false need the company login: set RYSH_OIDC_ISSUER"
    )
if not RYSH_LOCAL_LOGIN:  # passwords only for the break-glass users, at /login/ and /admin/login/ alike
    AUTHENTICATION_BACKENDS[AUTHENTICATION_BACKENDS.index("django.contrib.auth.backends.ModelBackend")] = (
        "accounts.backends.BreakGlassBackend"
    )

LANGUAGE_CODE = "en-us"
TIME_ZONE = envstr("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns on a missing root; finders serve static/
WHITENOISE_USE_FINDERS = True  # serve straight from static/ without collectstatic

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from hx-headers, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
# Behind a proxy that terminates HTTPS (docs/security.md): RYSH_HTTPS=true makes the cookies
# secure, trusts the proxy's X-Forwarded-Proto (the proxy must set it, overwriting the client's),
# redirects plain HTTP to HTTPS and sends HSTS (RYSH_HSTS_SECONDS, a year by default; start small
# while trying it: browsers remember it).
RYSH_HTTPS = envbool("RYSH_HTTPS", False)
if RYSH_HTTPS:
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [
        r"^healthz$",
        r"^readyz$",
        r"^metrics$",
    ]  # probes and scrapes ask the process itself, in HTTP
    SECURE_HSTS_SECONDS = envint("RYSH_HSTS_SECONDS", 31_536_000, minimum=0)
    # Subdomains and the browsers' preload list bind the whole domain, not this server: opt in
    # with RYSH_HSTS_SUBDOMAINS / RYSH_HSTS_PRELOAD; left off, check --deploy is told it was chosen.
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("RYSH_HSTS_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = envbool("RYSH_HSTS_PRELOAD", False)
    SILENCED_SYSTEM_CHECKS = [
        *([] if SECURE_HSTS_INCLUDE_SUBDOMAINS else ["security.W005"]),
        *([] if SECURE_HSTS_PRELOAD else ["security.W021"]),
    ]

# rysh
DEMO_RECIPES_REPO = str(DATA_DIR / "demo-recipes")  # `make run` seeds it (manage.py seed_demo)
RYSH_RECIPES_REPO = envstr("RYSH_RECIPES_REPO", DEMO_RECIPES_REPO)
RYSH_RECIPES_BRANCH = envstr("RYSH_RECIPES_BRANCH", "main")
# the push hook's shared secret (/hooks/git/, catalogue/hooks.py); empty: the hook is off
RYSH_GIT_HOOK_SECRET = envstr("RYSH_GIT_HOOK_SECRET")
RYSH_RESULTS_DIR = Path(envstr("RYSH_RESULTS_DIR", str(DATA_DIR / "results"))).resolve()
RYSH_EXECUTOR_MODEL = envstr("RYSH_EXECUTOR_MODEL", "claude-sonnet-5-5")  # the newest Sonnet
RYSH_JUDGE_MODEL = envstr("RYSH_JUDGE_MODEL", "claude-haiku-5-5")  # the newest Haiku
RYSH_PROVIDER = envstr("RYSH_PROVIDER", "auto")  # auto | anthropic | scripted
RYSH_WORKER_LOST_SECONDS = envint("RYSH_WORKER_LOST_SECONDS", 60, minimum=10)
RYSH_WORKER_LOST_RETRIES = envint("RYSH_WORKER_LOST_RETRIES", 2, minimum=0)

# web recipes (agents/browser/__init__.py)
RYSH_HOST = envstr("RYSH_HOST", "127.0.0.1")
RYSH_PORT = envint("RYSH_PORT", 8000, minimum=1)
# Tiny Press, the offline web demo's target site, served at /demo-site/ (public, no login).
# On only while the demo is: the recipes come from the seeded demo repository (the default).
RYSH_DEMO_SITE = envbool("RYSH_DEMO_SITE", RYSH_RECIPES_REPO == DEMO_RECIPES_REPO)
# Where this dashboard is reached; a recipe `url: /demo-site/` is resolved against it.
RYSH_SITE_URL = envstr("RYSH_SITE_URL", f"http://{RYSH_HOST}:{RYSH_PORT}").rstrip("/")

# email notifications (notify/): the console backend by default, so `make run` needs nothing
EMAIL_BACKEND = envstr("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "rysh@localhost")
EMAIL_HOST = envstr("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = 10
# webhook and Slack deliveries (notify/): one attempt (resolving, connecting, sending, reading the
# whole answer) gets this many seconds in all; a socket timeout alone counts per read, and a
# receiver that drips a byte at a time would hold a worker for hours
RYSH_NOTIFY_TIMEOUT = envint("RYSH_NOTIFY_TIMEOUT", 10, minimum=1)
# host names a webhook or Slack URL may name although they resolve to a loopback, private,
# link-local or other internal address (refused otherwise: the delivery log would map the
# internal network); comma-separated, compared with the URL's host as written
RYSH_NOTIFY_ALLOW_HOSTS = envhosts("RYSH_NOTIFY_ALLOW_HOSTS")


def _ws_origins() -> list[str]:
    """The exact origins (scheme://host:port) a websocket may come from: the site's own address,
    CSRF_TRUSTED_ORIGINS, and each ALLOWED_HOSTS entry at RYSH_SITE_URL's port (rysh_site/asgi.py)."""
    site = urlsplit(RYSH_SITE_URL)
    port = site.port or (443 if site.scheme == "https" else 80)
    origins = [f"{site.scheme}://{site.netloc}".lower()] + [o.rstrip("/") for o in CSRF_TRUSTED_ORIGINS]
    for host in ALLOWED_HOSTS:
        if host != "*":  # a wildcard host names no origin; list them in CSRF_TRUSTED_ORIGINS
            origins += [f"http://{host}:{port}", f"https://{host}:{port}"]
    return list(dict.fromkeys(origins))


RYSH_WS_ORIGINS = _ws_origins()
# System Chromium when present; empty: Playwright's own build (`playwright install chromium`).
RYSH_CHROMIUM = envstr("RYSH_CHROMIUM", shutil.which("chromium") or shutil.which("chromium-browser") or "")
RYSH_PROFILES_DIR = DATA_DIR / "profiles"  # persistent browser profiles, mode 0700


def _browser_private_hosts() -> list[str]:
    """The browser of web recipes reaches only public addresses (agents/egress.py), for every
    request and redirect hop; these hosts it may reach although their addresses are private or
    internal (an intranet a team automates), comma-separated: `wiki.corp.example`,
    `*.corp.example`, `10.0.0.7`, `host:port`, `[fd00::7]:8080`. This dashboard's own
    RYSH_SITE_URL host:port is allowed always (runs/wiring.py: the offline demo browses it)."""
    hosts = [h.strip().lower() for h in envstr("RYSH_BROWSER_ALLOW_PRIVATE_HOSTS").split(",") if h.strip()]
    for host in hosts:
        if not re.fullmatch(r"((\*\.)?[a-z0-9_-][a-z0-9._-]*|\[[0-9a-f:.]+\]|[0-9a-f:.]+)(:\d{1,5})?", host):
            raise ImproperlyConfigured(
                f"RYSH_BROWSER_ALLOW_PRIVATE_HOSTS: expected host names, *.domain or host:port, got {host!r}"
            )
    return hosts


RYSH_BROWSER_ALLOW_PRIVATE_HOSTS = _browser_private_hosts()
RYSH_SCREENSHOTS_DIR = DATA_DIR / "screenshots"  # the filmstrip: one small JPEG per web step
RYSH_VIDEOS_DIR = DATA_DIR / "videos"  # `record: true`
# Result snapshots (runs/snapshots.py): every pass's result files, kept once per content.
RYSH_SNAPSHOTS_DIR = Path(envstr("RYSH_SNAPSHOTS_DIR", str(DATA_DIR / "snapshots"))).resolve()
# `manage.py prune_snapshots` keeps the last N runs' snapshots per recipe; 0 keeps them all.
RYSH_SNAPSHOT_KEEP_RUNS = envint("RYSH_SNAPSHOT_KEEP_RUNS", 0, minimum=0)
# A result file larger than this is listed in its snapshot (name, size) but not kept.
RYSH_SNAPSHOT_FILE_MAX_BYTES = envint("RYSH_SNAPSHOT_FILE_MAX_BYTES", 64 * 1024 * 1024, minimum=0)
# Retention (ops/retention.py, docs/retention.md): days each kind of data is kept after its run
# finished (after it was made, for deliveries and the audit log); 0 keeps it forever. A run's
# row, totals, passes, verdicts, report and ledger are kept forever whatever these say.
RYSH_KEEP_STEPS_DAYS = envint("RYSH_KEEP_STEPS_DAYS", 90, minimum=0)  # steps, messages, events
RYSH_KEEP_MEDIA_DAYS = envint("RYSH_KEEP_MEDIA_DAYS", 30, minimum=0)  # screenshots and videos
RYSH_KEEP_SNAPSHOTS_DAYS = envint("RYSH_KEEP_SNAPSHOTS_DAYS", 180, minimum=0)  # result snapshots
RYSH_KEEP_DELIVERIES_DAYS = envint("RYSH_KEEP_DELIVERIES_DAYS", 30, minimum=0)  # notifications, push hooks
RYSH_KEEP_AUDIT_DAYS = envint("RYSH_KEEP_AUDIT_DAYS", 730, minimum=0)  # the audit log
# rows deleted per transaction: each batch is short, so a worker's settle never waits long
RYSH_PRUNE_BATCH = envint("RYSH_PRUNE_BATCH", 500, minimum=1)
# Re-judge (review): how many past passes at most, and the hard token ceiling of one re-judge.
RYSH_REJUDGE_MAX_PASSES = envint("RYSH_REJUDGE_MAX_PASSES", 50, minimum=1)
RYSH_REJUDGE_MAX_TOKENS = envint("RYSH_REJUDGE_MAX_TOKENS", 500_000, minimum=1000)
# ... and how many re-judges one person may start per calendar day (in TIME_ZONE); one change
# has one re-judge queued or running at a time whatever this says
RYSH_REJUDGE_DAILY_MAX = envint("RYSH_REJUDGE_DAILY_MAX", 10, minimum=1)
# Evals in review (docs/evals.md): a passing suite on the change's head is a condition of merge;
# and suites start by themselves when a change touching a recipe with cases is opened or revised.
RYSH_REVIEW_REQUIRE_EVALS = envbool("RYSH_REVIEW_REQUIRE_EVALS", False)
RYSH_REVIEW_AUTO_EVALS = envbool("RYSH_REVIEW_AUTO_EVALS", False)
RYSH_PAGE_TEXT_LIMIT = envint("RYSH_PAGE_TEXT_LIMIT", 20000, minimum=500)  # characters of a page read
RYSH_BROWSER_TIMEOUT = envint("RYSH_BROWSER_TIMEOUT", 15, minimum=1)  # seconds per browser action
RYSH_PROFILE_WAIT = envint("RYSH_PROFILE_WAIT", 60, minimum=0)  # seconds to wait for a busy profile
# the run page's step log says that a step thought and how much; its text only when this is on
RYSH_SHOW_THINKING = envbool("RYSH_SHOW_THINKING", False)
RYSH_APPROVAL_TIMEOUT = envint("RYSH_APPROVAL_TIMEOUT", 1800, minimum=1)  # then rejected (recipes: approve_timeout)
# grants (docs/spend.md): all grants to one run may add at most this percent of the recipe's own
# outer ceilings (passes, outer total, outer time); 100: the recipe's own once more
RYSH_GRANT_MAX_PERCENT = envint("RYSH_GRANT_MAX_PERCENT", 100, minimum=0)
# the organisation's policy file (docs/policy.md), read at every run's start; set but missing:
# no run starts (fail closed)
RYSH_ORG_POLICY = envstr("RYSH_ORG_POLICY")
RYSH_SCHEDULE_MAX_FAILURES = envint("RYSH_SCHEDULE_MAX_FAILURES", 5, minimum=1)
# the username schedules without an owner of their own start their runs for (their user quota
# counts them); empty: a recipe's own schedule runs for whoever approved its last change request
RYSH_SCHEDULE_OWNER = envstr("RYSH_SCHEDULE_OWNER", "")

# coding loops (docs/coding-loops.md): each `workdir:` run works in its own copy of the recipes repository
RYSH_WORKSPACES_DIR = Path(envstr("RYSH_WORKSPACES_DIR", str(DATA_DIR / "workspaces"))).resolve()
# copies of finished runs nobody kept are removed this many days after the run ended (0: never)
RYSH_WORKSPACE_KEEP_DAYS = envint("RYSH_WORKSPACE_KEEP_DAYS", 14, minimum=0)
# every command runs in a bubblewrap sandbox; `off` (an admin's choice, shown on every such
# run) runs them as plain processes of the worker
RYSH_SANDBOX = envchoice("RYSH_SANDBOX", "on", ("on", "off"))
RYSH_SANDBOX_BWRAP = envstr("RYSH_SANDBOX_BWRAP", "bwrap")
RYSH_COMMAND_TIMEOUT = envint("RYSH_COMMAND_TIMEOUT", 120, minimum=1)  # seconds a command may run
# sub_agent calls of one reply that run (docs/agent-tools.md); the rest are refused with the numbers
RYSH_SUBAGENTS_PARALLEL = envint("RYSH_SUBAGENTS_PARALLEL", 3, minimum=1)
# a command's memory: its processes and its files in /tmp and /dev/shm together (a memory cgroup
# where the worker can make one), and each process's address space
RYSH_SANDBOX_MEMORY_MB = envint("RYSH_SANDBOX_MEMORY_MB", 4096, minimum=64)
RYSH_SANDBOX_PROCESSES = envint("RYSH_SANDBOX_PROCESSES", 512, minimum=8)
# a command that grows its working copy past this (on disk, MB) is ended with a tool error
RYSH_WORKSPACE_MAX_MB = envint("RYSH_WORKSPACE_MAX_MB", 2048, minimum=16)
# more folders the sandbox shows empty, ':'-separated (the data folder, results and the worker's
# home are hidden always): put any folder with secrets here
RYSH_SANDBOX_HIDE = [p for p in envstr("RYSH_SANDBOX_HIDE").split(":") if p]
RYSH_SANDBOX_PATH = envstr("RYSH_SANDBOX_PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
# a coding loop's `setup:` (docs/coding-loops.md): its commands fetch only from these hosts,
# through the worker's proxy (public hosts; a private mirror as host:port in the second list),
# and are killed when they take longer than the timeout together (seconds)
RYSH_SETUP_ALLOW_HOSTS = settings_setup.setup_allow_hosts()
RYSH_SETUP_ALLOW_PRIVATE_HOSTS = settings_setup.setup_private_hosts()
RYSH_SETUP_TIMEOUT = envint("RYSH_SETUP_TIMEOUT", 600, minimum=1)
# dependency caches (pip, npm, Go modules), one folder per repository: written by setup, read-only
# to the agent's commands; removed by retention when no run used them for RYSH_KEEP_CACHES_DAYS
RYSH_CACHES_DIR = Path(envstr("RYSH_CACHES_DIR", str(DATA_DIR / "caches"))).resolve()
RYSH_KEEP_CACHES_DAYS = envint("RYSH_KEEP_CACHES_DAYS", 30, minimum=0)
# tools from MCP servers (toolservers/, docs/mcp.md): how long a server may take to start and list
# its tools, how long one call may run (never past the leg's clock), the most characters a result
# may bring back (less when the budget has less room left)
RYSH_MCP_CONNECT_TIMEOUT = envint("RYSH_MCP_CONNECT_TIMEOUT", 20, minimum=1)
RYSH_MCP_CALL_TIMEOUT = envint("RYSH_MCP_CALL_TIMEOUT", 60, minimum=1)
RYSH_MCP_RESULT_CHARS = envint("RYSH_MCP_RESULT_CHARS", 100_000, minimum=1000)

# OpenTelemetry traces of every run (rysh_site/tracing.py, docs/tracing.md): on when the standard
# OTLP endpoint variables name a receiver (the exporter reads every OTEL_* variable itself) and
# the SDK is not disabled; prompt, result and argument text only with the GenAI conventions'
# content-capture switch
RYSH_TRACES = bool(envstr("OTEL_EXPORTER_OTLP_ENDPOINT") or envstr("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) and (
    envstr("OTEL_SDK_DISABLED").strip().lower() != "true"
)
RYSH_TRACES_CAPTURE_CONTENT = envstr("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").strip().lower() == "true"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    # axes says INFO on every login attempt; its warnings (failures, lockouts) are enough
    "loggers": {"axes": {"level": "WARNING"}},
}
