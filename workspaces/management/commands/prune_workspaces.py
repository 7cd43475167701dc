"""Remove the working copies of runs that finished more than RYSH_WORKSPACE_KEEP_DAYS ago and
that nobody kept. The workers run it every hour (a django-q2 schedule)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from workspaces.services import workspaces_prune


class Command(BaseCommand):
    help = "Remove unkept working copies of runs that finished RYSH_WORKSPACE_KEEP_DAYS ago (0 keeps them all)."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, help="override RYSH_WORKSPACE_KEEP_DAYS")
        parser.add_argument("--dry-run", action="store_true", help="say what would go; remove nothing")

    def handle(self, *args, days=None, dry_run=False, **options):
        said = workspaces_prune(days=days, dry_run=dry_run)
        verb = "would remove" if dry_run else "removed"
        for line in said:
            self.stdout.write(f"{verb}: {line}")
        self.stdout.write(f"{verb} {len(said)} working cop{'y' if len(said) == 1 else 'ies'}")
