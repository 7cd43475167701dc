"""The Notifications pages: logins, roles on every page and POST, CSRF, masked secrets."""

from __future__ import annotations

import pytest
from django.test import Client

from notify import services
from notify.models import Channel, Delivery
from tests.recipes_git import make_user

pytestmark = pytest.mark.django_db

SLACK_URL = "https://hooks.slack.com/services/T000/B000/XXXXSECRETXXXX"
HOOK_URL = "http://127.0.0.1:9/hooks/very-secret-path?token=tok123"


def client_for(role: str | None, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if role is not None:
        client.force_login(make_user(f"{role}-user", role=role))
    return client


@pytest.fixture
def hook():
    return services.channel_save(
        user=None, name="hook", kind="webhook", url=HOOK_URL, secret="hmac-secret-value-0123456789"
    )[0]


def pages(channel) -> list[str]:
    return ["/notifications/", f"/notifications/{channel.pk}/", "/notifications/deliveries/"]


def posts(channel) -> list[tuple[str, dict]]:
    return [
        ("/notifications/", {"name": "new", "kind": "email", "recipients": "a@example.com", "enabled": "on"}),
        (f"/notifications/{channel.pk}/", {"name": "renamed", "kind": "webhook"}),
        (f"/notifications/{channel.pk}/test/", {}),
        (f"/notifications/{channel.pk}/delete/", {}),
    ]


def test_it_needs_a_login_for_every_page_and_post(hook):
    anonymous = client_for(None)
    for url in pages(hook):
        response = anonymous.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url
    for url, data in posts(hook):
        assert anonymous.post(url, data).status_code == 302, url
    assert Channel.objects.get().name == "hook" and not Delivery.objects.exists()


@pytest.mark.parametrize("role", [None, "viewer", "operator", "editor"])
def test_only_admins_see_or_change_channels(hook, role):
    client = Client()
    client.force_login(make_user("someone", role=role))
    for url in pages(hook)[:2]:
        assert client.get(url).status_code == 403, url
    for url, data in posts(hook):
        assert client.post(url, data).status_code == 403, url
    assert list(Channel.objects.values_list("name", flat=True)) == ["hook"] and not Delivery.objects.exists()


def test_operators_and_admins_read_the_delivery_log_viewers_do_not(hook):
    services.channel_test(channel=hook)
    assert client_for("viewer").get("/notifications/deliveries/").status_code == 403
    assert client_for("editor").get("/notifications/deliveries/").status_code == 403
    page = client_for("operator").get("/notifications/deliveries/").content.decode()
    assert "<code>test</code>" in page and "queued" in page
    assert "very-secret-path" not in page and "tok123" not in page
    assert client_for("admin").get("/notifications/deliveries/").status_code == 200


def test_every_post_needs_the_csrf_token(hook):
    client = client_for("admin", csrf=True)
    for url, data in posts(hook):
        assert client.post(url, data).status_code == 403, url
    assert Channel.objects.get().name == "hook"


def test_an_admin_adds_a_slack_channel_and_never_sees_its_url_again():
    client = client_for("admin")
    response = client.post(
        "/notifications/",
        {
            "name": "team-slack",
            "kind": "slack",
            "url": SLACK_URL,
            "events": ["run.ended", "budget.80"],
            "enabled": "on",
        },
    )
    channel = Channel.objects.get(name="team-slack")
    assert response.status_code == 302 and response["Location"] == f"/notifications/{channel.pk}/"
    assert channel.url == SLACK_URL and channel.events == ["run.ended", "budget.80"]
    for url in ("/notifications/", f"/notifications/{channel.pk}/"):
        page = client.get(url).content.decode()
        assert "XXXXSECRETXXXX" not in page and "/services/" not in page
        assert "https://hooks.slack.com/…/•••• (saved)" in page


def test_a_webhooks_generated_secret_is_shown_once_then_masked():
    client = client_for("admin")
    client.post("/notifications/", {"name": "hook", "kind": "webhook", "url": HOOK_URL, "enabled": "on"})
    channel = Channel.objects.get()
    assert len(channel.secret) == 64
    first = client.get(f"/notifications/{channel.pk}/").content.decode()
    assert channel.secret in first and "it is not shown again" in first
    second = client.get(f"/notifications/{channel.pk}/").content.decode()
    assert channel.secret not in second and "•••••••• (saved)" in second
    assert "very-secret-path" not in second and "tok123" not in second


def test_saving_with_blank_url_and_secret_keeps_them(hook):
    client = client_for("admin")
    response = client.post(
        f"/notifications/{hook.pk}/",
        {"name": "hook", "kind": "webhook", "url": "", "secret": "", "events": ["run.paused"]},
    )
    assert response.status_code == 302
    hook.refresh_from_db()
    assert hook.url == HOOK_URL and hook.secret == "hmac-secret-value-0123456789"
    assert hook.events == ["run.paused"] and hook.enabled is False
    page = client.get(f"/notifications/{hook.pk}/").content.decode()
    assert "hmac-secret-value" not in page and "very-secret-path" not in page


def test_a_bad_url_is_refused_with_the_reason():
    client = client_for("admin")
    page = client.post(
        "/notifications/", {"name": "x", "kind": "webhook", "url": "file:///etc/passwd"}
    ).content.decode()
    assert "http:// or https://" in page and not Channel.objects.exists()


def test_send_test_queues_a_delivery_and_shows_it_in_the_log(hook):
    client = client_for("admin")
    response = client.post(f"/notifications/{hook.pk}/test/")
    assert response.status_code == 302 and response["Location"] == "/notifications/deliveries/"
    delivery = Delivery.objects.get()
    assert delivery.event == "test" and delivery.channel == hook
    page = client.get("/notifications/deliveries/").content.decode()
    assert f'id="delivery-{delivery.pk}"' in page and f"test delivery #{delivery.pk} queued" in page


def test_an_admin_deletes_a_channel(hook):
    client = client_for("admin")
    assert client.post(f"/notifications/{hook.pk}/delete/").status_code == 302
    assert not Channel.objects.exists()


def test_the_nav_links_to_notifications():
    assert 'href="/notifications/"' in client_for("admin").get("/notifications/").content.decode()


def test_the_nav_links_to_what_the_role_may_open():
    from django.contrib.auth.models import User

    from tests.runs.test_view_runs import client_for, user_with

    admin = client_for(User.objects.create_superuser("boss", password="x")).get("/history/").content.decode()
    operator = client_for(user_with("operator")).get("/history/").content.decode()
    viewer = client_for(user_with("viewer")).get("/history/").content.decode()
    assert '<a href="/notifications/">Notifications</a>' in admin
    assert '<a href="/notifications/deliveries/">Notifications</a>' in operator
    assert "Notifications</a>" not in viewer
