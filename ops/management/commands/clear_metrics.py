"""Empty the metrics directory (RYSH_METRICS_DIR) before this machine's processes start.

prometheus_client's multiprocess mode keeps one file per process there; a process that exits
leaves its file, so its counters still count until the directory is emptied. Empty it only while
none of the machine's processes run (`make run` does it first; docs: Metrics).
"""

from django.conf import settings
from django.core.management.base import BaseCommand

from ops.metrics import clear_shared_dir


class Command(BaseCommand):
    help = "Empty RYSH_METRICS_DIR before this machine's web and worker processes start (docs: Metrics)."

    def handle(self, *args, **options):
        if not settings.RYSH_METRICS:
            self.stdout.write("metrics are off (RYSH_METRICS): nothing to clear")
            return
        removed = clear_shared_dir(settings.RYSH_METRICS_DIR)
        self.stdout.write(f"cleared {removed} file(s) from {settings.RYSH_METRICS_DIR}")
