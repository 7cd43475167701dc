from django import template

from audit.selectors import audit_can_read

register = template.Library()


@register.filter
def can_read_audit(user) -> bool:
    """For the nav: the link shows only to those the page lets in."""
    return audit_can_read(user)
