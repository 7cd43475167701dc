"""Runs hold a slot (runs.slots) instead of their target: a coding recipe's runs with other
arguments may go side by side. Every existing run's slot is its target — exactly what the old
constraint held, so no active run can clash; runs started from now on get their own slots."""

from django.conf import settings
from django.db import migrations, models
from django.db.models import F


def fill_slots(apps, schema_editor):
    apps.get_model("runs", "Run").objects.update(slot=F("target"))


class Migration(migrations.Migration):
    dependencies = [
        ("catalogue", "0002_git_delivery"),
        ("runs", "0013_worker_beat_sandbox"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="run",
            name="one_active_run_per_target",
        ),
        migrations.AddField(
            model_name="run",
            name="slot",
            field=models.CharField(default="", max_length=260),
        ),
        migrations.RunPython(fill_slots, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="run",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("state__in", ["queued", "running", "awaiting approval"]),
                    models.Q(("state", "paused"), models.Q(("pause_reason", "cancelled"), _negated=True)),
                    _connector="OR",
                ),
                fields=("slot",),
                name="one_active_run_per_slot",
            ),
        ),
    ]
