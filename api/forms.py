"""The profile page's token form: a name, scopes, an expiry; admins also pick whose token it is
(a service user's, e.g. `ci-bot` for CI)."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from api.models import SCOPES
from api.services import EXPIRY_DAYS

SCOPE_HELP = {
    "read": "read: recipes, runs, approvals, spend, quotas",
    "operate": "operate: start runs, stop, cancel, continue, resume, land, grant, approve, reject (and read)",
    "admin": "admin: everything an admin may do (and operate, read)",
}


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=60, widget=forms.TextInput(attrs={"placeholder": "e.g. ci", "autocomplete": "off"})
    )
    scopes = forms.MultipleChoiceField(
        choices=[(s, SCOPE_HELP[s]) for s in SCOPES], widget=forms.CheckboxSelectMultiple, initial=["read"]
    )
    days = forms.TypedChoiceField(
        label="expires in", choices=[(d, f"{d} days") for d in EXPIRY_DAYS], coerce=int, initial=90
    )

    def __init__(self, *args, for_others: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if for_others:  # admins: a token for a service user (or anyone), who owns it from then on
            self.fields["owner"] = forms.ModelChoiceField(
                queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
                required=False,
                label="for",
                empty_label="myself",
            )
