"""A real OpenID Connect provider on loopback for the tests: oidc-provider-mock (Flask, authlib),
which signs real RS256 ID tokens, serves discovery, JWKS and userinfo, and lets a test set each
person's claims (`set_user`). Any client id and secret are accepted.

One thing a provider does not do on its own is give this client a token meant for another: for
the wrong-audience test, `token_for` makes the token endpoint see another client id (as if a
code issued to another application had been slipped in), so the ID token it signs names that
client as its audience."""

from __future__ import annotations

import io
import threading
from contextlib import contextmanager
from datetime import timedelta
from urllib.parse import parse_qsl, urlencode

import requests
import werkzeug.serving
from oidc_provider_mock import app as provider_app


class Provider:
    def __init__(self, server):
        self.server = server
        self.url = f"http://localhost:{server.server_port}"
        self.token_for = ""  # a client id the token endpoint sees instead of the one sent

    def set_user(self, sub: str, **claims) -> None:
        requests.put(f"{self.url}/users/{sub}", json=claims, timeout=5).raise_for_status()

    def authorize(self, authorize_url: str, sub: str) -> str:
        """The person says who they are and presses Authorize: the redirect back to the client."""
        answer = requests.post(authorize_url, data={"sub": sub}, allow_redirects=False, timeout=5)
        assert answer.status_code == 302, answer.text
        return answer.headers["location"]

    def wsgi(self, app):
        def middleware(environ, start_response):
            if self.token_for and environ["PATH_INFO"] == "/oauth2/token":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                form = dict(parse_qsl(environ["wsgi.input"].read(length).decode()))
                form["client_id"] = self.token_for
                body = urlencode(form).encode()
                environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
            return app(environ, start_response)

        return middleware


@contextmanager
def running_provider(*, token_max_age: timedelta = timedelta(hours=1)):
    app = provider_app(access_token_max_age=token_max_age, require_nonce=True)
    holder: dict = {}
    server = werkzeug.serving.make_server("localhost", 0, lambda e, s: holder["wsgi"](e, s), threaded=True)
    provider = Provider(server)
    holder["wsgi"] = provider.wsgi(app)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
