"""What the Prices and Quotas pages' tests share: an admin signed in, and the text a form shows
beside a field it refused."""

import pytest

from tests.runs.test_view_runs import client_for, user_with


@pytest.fixture
def admin():
    return client_for(user_with("admin"))


def field_error(page: str, field: str) -> str:
    """What the page says beside `field` (its error list and what follows it)."""
    start = page.index(f'id="id_{field}_error"')
    return page[start : start + 300]
