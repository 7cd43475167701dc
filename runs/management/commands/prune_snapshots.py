"""Drop the result snapshots of each recipe's older runs (keep the newest N finished runs' per
recipe: --keep, else RYSH_SNAPSHOT_KEEP_RUNS; 0 keeps all) and say what it freed."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from runs.results import snapshots


class Command(BaseCommand):
    help = "Prune result snapshots beyond the newest N finished runs per recipe, and report what it freed."

    def add_arguments(self, parser):
        parser.add_argument("--keep", type=int, default=None, help="runs to keep per recipe (default: the setting)")
        parser.add_argument("--dry-run", action="store_true", help="say what would be pruned, change nothing")

    def handle(self, *args, keep=None, dry_run=False, **options):
        keep = settings.RYSH_SNAPSHOT_KEEP_RUNS if keep is None else keep
        if keep < 0:
            raise CommandError(f"--keep {keep}: expected 0 (keep all) or a number of runs per recipe")
        if keep == 0:
            self.stdout.write("retention keeps every run's snapshots (RYSH_SNAPSHOT_KEEP_RUNS=0); orphans only")
        self.stdout.write(snapshots.prune(keep=keep, dry_run=dry_run).describe(dry_run=dry_run))
