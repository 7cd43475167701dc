"""Websocket origins are checked exactly (scheme://host:port), not by host alone: the
SiteOriginValidator layer around the project's websocket app (rysh_site/asgi.py)."""

from urllib.parse import urlsplit

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from rysh_site.asgi import SiteOriginValidator, websocket_app

pytestmark = pytest.mark.django_db(transaction=True)
application = SiteOriginValidator(websocket_app)


def session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


def connect(origin: str | None, cookie) -> tuple[bool, int]:
    async def go():
        headers = [cookie] + ([(b"origin", origin.encode())] if origin else [])
        communicator = WebsocketCommunicator(application, "/ws/live/", headers=headers)
        connected, code = await communicator.connect(timeout=5)
        await communicator.disconnect()
        return connected, code

    return async_to_sync(go)()


@pytest.fixture
def site(settings):
    settings.RYSH_WS_ORIGINS = ["http://127.0.0.1:8000", "http://localhost:8000"]
    return session_cookie(User.objects.create_user("ann", password="x"))


def test_the_settings_derive_exact_origins_from_the_site_url_and_allowed_hosts():
    from django.conf import settings

    port = urlsplit(settings.RYSH_SITE_URL).port
    assert settings.RYSH_SITE_URL in settings.RYSH_WS_ORIGINS
    for host in (h for h in settings.ALLOWED_HOSTS if h != "testserver"):  # pytest-django adds it
        assert f"http://{host}:{port}" in settings.RYSH_WS_ORIGINS
        assert f"https://{host}:{port}" in settings.RYSH_WS_ORIGINS
    # a pattern without a scheme would match the host on any port
    assert all(urlsplit(origin).scheme in ("http", "https") for origin in settings.RYSH_WS_ORIGINS)


def test_the_right_origin_is_accepted(site):
    assert connect("http://127.0.0.1:8000", site)[0]
    assert connect("http://localhost:8000", site)[0]


def test_the_right_host_on_another_port_is_refused(site):
    for origin in ("http://127.0.0.1:9999", "http://127.0.0.1", "http://localhost:8001", "https://127.0.0.1:8000"):
        assert not connect(origin, site)[0], origin


def test_no_origin_or_another_host_is_refused(site):
    assert not connect(None, site)[0]
    assert not connect("http://evil.example:8000", site)[0]
