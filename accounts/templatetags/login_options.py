"""{% company_login next %}: the "Log in with <provider>" button of the login page, when the
company login is on (and nothing when it is off)."""

from django import template
from django.conf import settings

register = template.Library()


@register.inclusion_tag("accounts/company_login.html")
def company_login(next_url: str = "") -> dict:
    return {
        "oidc_name": settings.RYSH_OIDC_NAME if settings.RYSH_OIDC_ISSUER else "",
        "local_login": settings.RYSH_LOCAL_LOGIN,
        "next": next_url,
    }
