"""Signals other apps listen to, so that the catalogue never imports them."""

from django.dispatch import Signal

# sent after a sync wrote the catalogue (changed or not); kwargs: git (the GitRepo), repo (its
# redacted location), branch and head (the commit synced)
recipes_synced = Signal()
