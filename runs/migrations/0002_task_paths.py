"""The django-q2 entry points moved with the apps split: schedules and tasks already queued
name them by dotted path, so rewrite those paths (a queued run must still reach a worker)."""

from django.db import migrations

MOVED = {
    "automations.tasks.execute_run": "runs.worker.execute_run",
    "automations.tasks.sweep_lost_runs": "runs.worker.sweep_lost_runs",
    "automations.tasks.scheduled_run": "schedules.tasks.scheduled_run",
    "automations.tasks_sync.sync_task": "catalogue.tasks.sync_task",
}


def forwards(apps, schema_editor):
    from django_q.signing import BadSignature, SignedPackage  # django-q2's own package format

    Schedule = apps.get_model("django_q", "Schedule")
    for old, new in MOVED.items():
        Schedule.objects.filter(func=old).update(func=new)
    OrmQ = apps.get_model("django_q", "OrmQ")  # the ORM broker's queue; Redis holds its own
    for queued in OrmQ.objects.all():
        try:
            task = SignedPackage.loads(queued.payload)
        except BadSignature:
            continue  # not ours to read (another SECRET_KEY); left as it is
        if isinstance(task, dict) and task.get("func") in MOVED:
            task["func"] = MOVED[task["func"]]
            OrmQ.objects.filter(pk=queued.pk).update(payload=SignedPackage.dumps(task))


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0001_initial"),
        ("schedules", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
