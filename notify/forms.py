from __future__ import annotations

from django import forms

from catalogue.spec import NOTIFY_EVENTS
from notify.events import EVENT_LABELS
from notify.models import ChannelKind


class ChannelForm(forms.Form):
    """The channel form; the URL and the secret are never filled back in (blank keeps them)."""

    name = forms.CharField(max_length=60, help_text="what recipes name in notify:, e.g. ops-slack")
    kind = forms.ChoiceField(choices=ChannelKind.choices)
    url = forms.CharField(
        max_length=2000,
        required=False,
        label="URL",
        help_text="webhook or Slack incoming-webhook URL (http or https, at a public address unless an admin allows "
        "the host in RYSH_NOTIFY_ALLOW_HOSTS); when editing, leave blank to keep the saved one",
    )
    secret = forms.CharField(
        max_length=200,
        required=False,
        widget=forms.PasswordInput(render_value=False),
        label="signing secret",
        help_text="webhook only: the HMAC-SHA256 key, at least 24 bytes; leave blank to generate one (new) or keep "
        "the saved one",
    )
    recipients = forms.CharField(
        required=False, max_length=2000, help_text="email only: addresses, separated by commas"
    )
    events = forms.MultipleChoiceField(
        choices=[(e, f"{e} — {EVENT_LABELS[e]}") for e in NOTIFY_EVENTS],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="what this channel always gets; a recipe's notify: may add more for its own runs",
    )
    enabled = forms.BooleanField(required=False, initial=True)
