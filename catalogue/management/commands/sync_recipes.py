"""`python manage.py sync_recipes`: bring the recipe catalogue to the tracked branch's head.

Prints one line, `synced: <recipes> recipes, <changed> changed, <invalid> invalid, <seconds>s`.
Exit 0, also when recipes are invalid (they are listed with their errors in the dashboard);
exit 1 only when the repository itself cannot be read.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from catalogue.repo import RepoError
from catalogue.sync import recipes_sync


class Command(BaseCommand):
    help = "Sync the recipe catalogue from the recipes repository (RYSH_RECIPES_REPO)."

    def add_arguments(self, parser):
        parser.add_argument("--repo", help="a local path or clone URL (default: RYSH_RECIPES_REPO)")
        parser.add_argument("--branch", help="the tracked branch (default: RYSH_RECIPES_BRANCH)")

    def handle(self, *args, repo=None, branch=None, **options):
        try:
            result = recipes_sync(repo=repo, branch=branch)
        except RepoError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(result.line())
