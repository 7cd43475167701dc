"""The catalogue's sync tells the policies which commit it synced (catalogue.signals)."""

from __future__ import annotations

from django.dispatch import receiver

from catalogue.signals import recipes_synced
from policies.services import policy_sync


@receiver(recipes_synced, dispatch_uid="policies.recipes_synced")
def read_policy(sender, *, git=None, repo: str = "", branch: str = "", head: str = "", **kwargs) -> None:
    """`.rysh/policy.yaml` at the commit the catalogue just synced."""
    if git is not None and head:
        policy_sync(git=git, repo=repo, branch=branch, head=head)
