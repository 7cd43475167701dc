"""Signals other apps listen to, so that the catalogue never imports them."""

from django.dispatch import Signal

# sent after a sync wrote the catalogue (changed or not); no kwargs
recipes_synced = Signal()
