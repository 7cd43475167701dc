"""Apply retention now (docs/retention.md): remove each kind of data past its setting, in batches,
and say per kind what went (rows, files, bytes). `--dry-run` says what would go and changes
nothing; the daily schedule runs the same prune."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audit.context import CLI, audit_context, cli_actor_name
from ops.retention import retention_prune


class Command(BaseCommand):
    help = "Remove the data past its retention setting (steps, media, snapshots, copies, deliveries, audit)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="say what the prune would remove; change nothing")
        parser.add_argument("--batch", type=int, default=None, help="rows per transaction (default RYSH_PRUNE_BATCH)")
        parser.add_argument(
            "--vacuum",
            action="store_true",
            help="then VACUUM the SQLite file to give the freed pages back (holds the database while it runs)",
        )

    def handle(self, *args, dry_run=False, batch=None, vacuum=False, **options):
        if batch is not None and batch < 1:
            raise CommandError(f"--batch {batch}: expected a number of rows of at least 1")
        if dry_run and vacuum:
            raise CommandError("--vacuum changes the database file: not with --dry-run")
        # the CLI has no login: the audit entry names the OS user (`cli:<user>`)
        with audit_context(source=CLI, actor_name=cli_actor_name()):
            pruned = retention_prune(dry_run=dry_run, batch=batch, vacuum=vacuum)
        for line in pruned.lines():
            self.stdout.write(line)
