"""Find runs whose worker died and continue them from their checkpoint (or pause them).

The same sweep runs every minute as a django-q2 schedule; this command runs it now.
"""

from django.core.management.base import BaseCommand

from runs.services import runs_sweep_lost


class Command(BaseCommand):
    help = "Settle and continue (or pause) runs whose worker stopped sending heartbeats."

    def handle(self, *args, **options):
        said = runs_sweep_lost()
        for line in said:
            self.stdout.write(line)
        self.stdout.write(f"swept: {len(said)} lost run(s)")
