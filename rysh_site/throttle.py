"""Login throttling: after RYSH_LOGIN_MAX_FAILURES failed logins within RYSH_LOGIN_LOCKOUT_MINUTES,
further attempts for that username, or from that client address, are refused without even
checking the password, until the oldest failure leaves the window.

The counters live in Django's cache. The embedded default has no CACHES setting, so that is the
per-process LocMem cache: each web process counts on its own (fine for the one daphne of
`make run`; several processes behind a balancer multiply the allowance by their number).
The client address is REMOTE_ADDR: behind a reverse proxy, that is the proxy's.
"""

from __future__ import annotations

import hashlib
import math
import time

from django import forms
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache

PREFIX = "rysh:login-failures:"


def _window() -> int:
    return settings.RYSH_LOGIN_LOCKOUT_MINUTES * 60


def user_key(username: str) -> str:
    digest = hashlib.sha256(username.strip().lower().encode()).hexdigest()
    return f"{PREFIX}user:{digest}"


def ip_key(address: str) -> str:
    return f"{PREFIX}ip:{address}"


def _recent(key: str, now: float) -> list[float]:
    """The failure times of this key still inside the window."""
    return [t for t in cache.get(key, []) if t > now - _window()]


def locked_seconds(keys: list[str], now: float | None = None) -> int:
    """Seconds until every key may try again (0: none is locked)."""
    now = time.time() if now is None else now
    wait = 0.0
    for key in keys:
        recent = _recent(key, now)
        if len(recent) >= settings.RYSH_LOGIN_MAX_FAILURES:
            # refused until enough of the failures age out of the window
            oldest_counted = sorted(recent)[-settings.RYSH_LOGIN_MAX_FAILURES]
            wait = max(wait, oldest_counted + _window() - now)
    return math.ceil(wait)


def record_failure(keys: list[str], now: float | None = None) -> None:
    now = time.time() if now is None else now
    for key in keys:
        recent = _recent(key, now)[-(settings.RYSH_LOGIN_MAX_FAILURES - 1) :] + [now]
        cache.set(key, recent, timeout=_window())


def clear(key: str) -> None:
    cache.delete(key)


class ThrottledAuthenticationForm(AuthenticationForm):
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Your username and password didn't match. Please try again.",
        "too_many": "Too many failed logins; try again in %(minutes)s.",
    }

    def _keys(self) -> list[str]:
        keys = [user_key(self.data.get("username", "") or "")]
        if self.request is not None and (address := self.request.META.get("REMOTE_ADDR")):
            keys.append(ip_key(address))
        return keys

    def clean(self):
        keys = self._keys()
        if wait := locked_seconds(keys):
            minutes = max(1, math.ceil(wait / 60))
            params = {"minutes": f"{minutes} minute{'s' if minutes != 1 else ''}"}
            raise forms.ValidationError(self.error_messages["too_many"], code="too_many", params=params)
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            record_failure(keys)
            raise
        clear(keys[0])  # a success clears the username's counter (not the address's)
        return cleaned


class ThrottledLoginView(auth_views.LoginView):
    form_class = ThrottledAuthenticationForm
