"""A channel's URL is checked as a whole when it is saved (scheme, host, port, no user part, no
spaces), and a URL saved before that check never breaks a page nor leaks into the log."""

from __future__ import annotations

import pytest
from django.test import Client

from notify import services
from notify.models import Channel, Delivery, DeliveryState
from notify.tasks import deliver
from tests.recipes_git import make_user

pytestmark = pytest.mark.django_db

BAD_URLS = {
    "http://hooks.example:99999/x": "port must be a number from 1 to 65535",
    "http://hooks.example:0/x": "port must be a number from 1 to 65535",
    "http://hooks.example:http/x": "port must be a number from 1 to 65535",
    "https://user:pw@hooks.example/x": "must not carry user:password@",
    "https://hooks.example/x?token=a b": "must not contain spaces or control characters",
    "https://hooks.example/x\r\nX-Injected: 1": "must not contain spaces or control characters",
    "http://[::1/x": "not a host name or an IP address",
    "http://hooks..example/x": "not a host name or an IP address",
    "https://hooks.example/caf\u00e9": "must be ASCII",
}


@pytest.mark.parametrize("url", BAD_URLS)
def test_it_refuses_a_url_that_is_not_whole_at_save(url):
    with pytest.raises(services.ChannelError, match=BAD_URLS[url]) as caught:
        services.channel_save(user=None, name="hook", kind="webhook", url=url, secret="s" * 32)
    assert caught.value.field == "url"
    assert not Channel.objects.exists()


def test_the_form_shows_a_bad_port_beside_the_url_field():
    client = Client()
    client.force_login(make_user("admin-user", role="admin"))
    page = client.post(
        "/notifications/", {"name": "x", "kind": "slack", "url": "http://hooks.example:99999/services/T0/B0/SECRET"}
    ).content.decode()
    assert '<ul class="errorlist" id="id_url_error"><li>the URL&#x27;s port must be a number from 1 to 65535' in page
    assert not Channel.objects.exists()


def stored(url: str) -> Channel:
    """A channel saved before URLs were checked as a whole (straight into the table)."""
    return Channel.objects.create(name="old", kind="webhook", url=url, secret="s" * 32, events=["run.ended"])


def test_the_pages_stay_up_with_a_bad_url_saved_before():
    channel = stored("http://hooks.example:99999/x?token=tok123")
    client = Client()
    client.force_login(make_user("admin-user", role="admin"))
    services.channel_test(channel=channel)
    for url in ("/notifications/", f"/notifications/{channel.pk}/", "/notifications/deliveries/"):
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        assert "tok123" not in page, url
    assert "not a valid URL: save a new one" in client.get("/notifications/").content.decode()


def test_a_bad_stored_url_fails_its_delivery_as_a_bad_url():
    delivery = services.channel_test(channel=stored("http://hooks.example:99999/x?token=tok123"))
    deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.PENDING
    assert delivery.last_error.startswith("bad URL: the URL's port must be a number from 1 to 65535")
    assert "tok123" not in delivery.last_error


def test_a_space_in_a_stored_url_never_puts_its_query_in_the_log(receiver):
    r = receiver(200)
    base = r.url.split("?")[0]
    delivery = services.channel_test(channel=stored(f"{base}?token=leaked value"))
    deliver(delivery.pk)
    delivery = Delivery.objects.get(pk=delivery.pk)
    assert delivery.last_error.startswith("bad URL")
    assert "leaked" not in delivery.last_error and "token" not in delivery.last_error
    assert "SECRETPATH" not in delivery.last_error
    assert r.requests == []
