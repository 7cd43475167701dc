"""The Prices page (`/prices/`): the price table in force with each row's source, the models the
pinned SDK names with no price, and admins setting and removing prices (Django test client)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from audit.models import AuditEntry
from spend.models import ModelPrice
from spend.prices import price_of
from spend.services import price_set
from tests.runs.test_view_runs import client_for, user_with
from tests.spend.conftest import field_error
from tests.spend.test_selectors import fresh_prices  # noqa: F401

pytestmark = pytest.mark.django_db

FABLE_5_2 = {"model": "claude-fable-5-2", "input": "5", "output": "25", "cache_read": "0.5", "cache_write": "6.25"}


def row(page: str, row_id: str) -> str:
    start = page.index(f'id="{row_id}"')
    return page[start : page.index("</tr>", start)]


def test_it_needs_a_login(client):
    assert client.get("/prices/")["Location"].startswith("/login/")
    assert client.post("/prices/", FABLE_5_2)["Location"].startswith("/login/")


def test_a_viewer_reads_the_table_and_the_models_with_no_price_but_cannot_post():
    viewer = client_for(user_with("viewer"))
    page = viewer.get("/prices/").content.decode()
    assert "<td>$3.00</td><td>$15.00</td><td>$0.30</td><td>$3.75</td>" in row(page, "price-claude-sonnet-4-5")
    assert "the built-in table" in row(page, "price-claude-sonnet-4-5")
    assert '<span class="flag-bad">no price</span>' in row(page, "sdk-claude-fable-5-2")
    assert "as <code>claude-sonnet-4-5</code>" in row(page, "sdk-claude-sonnet-4-5-20250929")
    assert "Save price" not in page and "Set a price" not in page
    assert viewer.post("/prices/", FABLE_5_2).status_code == 403
    assert not ModelPrice.objects.exists()


def test_an_admin_sets_a_price_for_a_model_the_table_does_not_know(admin, django_capture_on_commit_callbacks):
    page = admin.get("/prices/?model=claude-fable-5-2").content.decode()
    assert 'name="model" value="claude-fable-5-2"' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post("/prices/", FABLE_5_2, follow=True)
    page = response.content.decode()
    assert "price of claude-fable-5-2 set" in page
    assert "set by an admin" in row(page, "price-claude-fable-5-2")
    assert "<td>$5.00</td><td>$25.00</td><td>$0.50</td><td>$6.25</td>" in row(page, "price-claude-fable-5-2")
    assert 'id="sdk-claude-fable-5-2"' not in page
    assert price_of("claude-fable-5-2").output == Decimal(25)
    assert AuditEntry.objects.get(action="price.set").actor.username == "admin-user"


def test_an_admin_overrides_a_built_in_price_and_removes_the_override(admin, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        admin.post("/prices/", {**FABLE_5_2, "model": "claude-haiku-4-5", "input": "0.9"})
    price = ModelPrice.objects.get()
    page = admin.get("/prices/").content.decode()
    assert "(over the built-in table)" in row(page, "price-claude-haiku-4-5")
    assert 'name="input" value="0.9000"' in admin.get("/prices/?model=claude-haiku-4-5").content.decode()
    assert f'href="/prices/{price.pk}/remove/"' in row(page, "price-claude-haiku-4-5")
    assert "/remove/" not in row(page, "price-claude-sonnet-4-5")  # a built-in row cannot be removed
    assert "Remove the admin price of claude-haiku-4-5?" in admin.get(f"/prices/{price.pk}/remove/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        page = admin.post(f"/prices/{price.pk}/remove/", follow=True).content.decode()
    assert "price of claude-haiku-4-5 removed; the built-in table applies" in page
    assert not ModelPrice.objects.exists() and price_of("claude-haiku-4-5").input == Decimal(1)


@pytest.mark.parametrize(
    "data, field, message",
    [
        ({**FABLE_5_2, "output": "-1"}, "output", "Ensure this value is greater than or equal to 0."),
        ({**FABLE_5_2, "cache_read": "cheap"}, "cache_read", "Enter a number."),
        ({**FABLE_5_2, "model": "claude opus"}, "model", "expected a model id such as claude-sonnet-5 (no spaces)"),
    ],
)
def test_it_shows_each_error_beside_its_field(admin, data, field, message):
    response = admin.post("/prices/", data)
    assert response.status_code == 400
    assert message in field_error(response.content.decode(), field)
    assert not ModelPrice.objects.exists()


def test_only_admins_remove_a_price():
    price = price_set(
        model="claude-mythos-5", input=Decimal(3), output=Decimal(15), cache_read=Decimal(0), cache_write=Decimal(4)
    )
    operator = client_for(user_with("operator"))
    assert operator.get(f"/prices/{price.pk}/remove/").status_code == 403
    assert operator.post(f"/prices/{price.pk}/remove/").status_code == 403
    assert ModelPrice.objects.exists()


def test_it_needs_the_csrf_token():
    strict = client_for(User.objects.create_superuser("root", password="x"), csrf=True)
    assert strict.post("/prices/", FABLE_5_2).status_code == 403
    assert not ModelPrice.objects.exists()


def test_it_escapes_a_model_name(admin):
    ModelPrice.objects.create(model="<b>x</b>", input=1, output=1, cache_read=1, cache_write=1)
    page = admin.get("/prices/").content.decode()
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_an_admin_may_set_the_one_hour_cache_write_apart_or_leave_it_at_twice_input(
    admin, django_capture_on_commit_callbacks
):
    page = admin.get("/prices/?model=claude-sonnet-5-5").content.decode()
    assert 'name="cache_write_1h" value="4' in page  # the form starts from the price in force
    with django_capture_on_commit_callbacks(execute=True):
        page = admin.post("/prices/", {**FABLE_5_2, "cache_write_1h": "9.5"}, follow=True).content.decode()
    assert "<td>$6.25</td><td>$9.50</td>" in row(page, "price-claude-fable-5-2")
    assert price_of("claude-fable-5-2").write_1h == Decimal("9.5")
    with django_capture_on_commit_callbacks(execute=True):
        page = admin.post("/prices/", FABLE_5_2, follow=True).content.decode()
    assert "<td>$6.25</td><td>$10.00</td>" in row(page, "price-claude-fable-5-2")  # blank: 2 × input
    assert ModelPrice.objects.get().cache_write_1h is None
