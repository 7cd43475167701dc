"""Login throttling, by django-axes: every authenticate() with a request goes through its backend
first, so the dashboard's /login/ and the admin's /admin/login/ are throttled alike, and a
refused attempt never reaches the password check.

Why axes and not our own counters: it is the maintained library for exactly this — failures
counted by username and by address in the database (shared by every web process, kept across
restarts: the cache counters of before were per process), the admin's login covered, lockouts
in the admin and `manage.py axes_reset_username|axes_reset_ip` to lift them, and AccessLog, the
record of successful logins that tells a known address from a new one. What it does not decide
for us is here, through its documented hooks (settings.py, AXES_*):

- the address (AXES_CLIENT_IP_CALLABLE): rysh_site/proxies.py, so behind the TLS proxy each
  person is counted by their own address, not everyone by the proxy's;
- what is counted (AXES_LOCKOUT_PARAMETERS, `lockout_parameters`): failures by the client address
  across usernames, and failures against the username from anywhere — except that from an address
  that has logged in as that user before, only that address's own failures count. So an attacker
  who exhausts a username from elsewhere slows themselves down, not the owner at their usual
  address, whose correct password still works;
- a refused attempt does not extend the lockout (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT):
  nobody can renew a lock forever by hammering on it;
- a successful login clears the failures against that username only (`LoginAttempts`), never the
  address's failures against other usernames, which would let anyone with an account reset their
  own address's count between guesses;
- the page a refused login gets (AXES_LOCKOUT_CALLABLE, `lockout_response`): the login form again,
  saying how long to wait.

RYSH_LOGIN_MAX_FAILURES and RYSH_LOGIN_LOCKOUT_MINUTES are read on each attempt (`failure_limit`,
`cool_off`).
"""

from __future__ import annotations

import math
from datetime import timedelta

from axes.handlers.database import AxesDatabaseHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt, AccessBase, AccessLog
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

REFUSED = "Too many failed logins; try again in {wait}."
PASSWORDS_OFF = "Password logins are turned off here (but for the break-glass admins): use the company login."
BY_USERNAME_OR_ADDRESS = ["username", "ip_address"]
# from an address the user has logged in from: that address's failures against the username, and
# the address's failures against any username
BY_KNOWN_ADDRESS = [["username", "ip_address"], "ip_address"]


class LoginForm(AuthenticationForm):
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your username and password didn't match. Please try again.",
    }

    def get_invalid_login_error(self):
        if not settings.RYSH_LOCAL_LOGIN:  # only the break-glass users may use a password (docs/login.md)
            return ValidationError(PASSWORDS_OFF, code="invalid_login")
        return super().get_invalid_login_error()


def failure_limit(request, credentials=None) -> int:
    return settings.RYSH_LOGIN_MAX_FAILURES


def cool_off(request=None) -> timedelta:
    return timedelta(minutes=settings.RYSH_LOGIN_LOCKOUT_MINUTES)


def lockout_parameters(request_or_attempt, credentials=None) -> list:
    """What the failures are counted by, for this username from this address (module docstring)."""
    if isinstance(request_or_attempt, AccessBase):
        username, address = request_or_attempt.username, request_or_attempt.ip_address
    else:
        username = get_client_username(request_or_attempt, credentials)
        address = request_or_attempt.axes_ip_address
    return BY_KNOWN_ADDRESS if _known_address(request_or_attempt, username, address) else BY_USERNAME_OR_ADDRESS


def _known_address(holder, username: str | None, address: str | None) -> bool:
    """Has `username` logged in from `address` before? Asked several times per attempt: the
    answer is kept on the request."""
    if not username or not address:
        return False
    memo = holder.__dict__.setdefault("_rysh_known_addresses", {})
    if (username, address) not in memo:
        memo[(username, address)] = AccessLog.objects.filter(username=username, ip_address=address).exists()
    return memo[(username, address)]


class LoginAttempts(AxesDatabaseHandler):
    """Axes' database handler; a success clears only the failures against its username."""

    def reset_user_attempts(self, request, credentials=None) -> int:
        count, _ = AccessAttempt.objects.filter(username=get_client_username(request, credentials)).delete()
        return count

    def locked_seconds(self, request, credentials=None) -> int:
        """Seconds until this username from this address may try again (0: it may now). For
        each lock that holds, the failures leave the window newest-last: it lifts when the one
        that brought the count to the limit does."""
        limit, window, now = failure_limit(request), cool_off().total_seconds(), timezone.now()
        wait = 0.0
        for attempts in self.get_user_attempts(request, credentials):
            counted = 0
            for failures, at in attempts.order_by("-attempt_time").values_list("failures_since_start", "attempt_time"):
                counted += failures
                if counted >= limit:
                    wait = max(wait, (at - now).total_seconds() + window)
                    break
        return math.ceil(wait)


def lockout_response(request: HttpRequest, original_response=None, credentials=None) -> HttpResponse:
    """The login page again (for the admin's login too), with how long to wait; 429. (Under ASGI
    axes passes the credentials where the original response goes: they are read from the request.)"""
    credentials = getattr(request, "axes_credentials", None) or (credentials if isinstance(credentials, dict) else None)
    handler = AxesProxyHandler.get_implementation()
    minutes = max(1, math.ceil(handler.locked_seconds(request, credentials) / 60))
    username = get_client_username(request, credentials) or ""
    context = {
        "form": LoginForm(request, initial={"username": username}),
        "refused": REFUSED.format(wait=f"{minutes} minute{'s' if minutes != 1 else ''}"),
        "next": request.POST.get("next") or request.GET.get("next", ""),
    }
    return render(request, "registration/login.html", context, status=429)
