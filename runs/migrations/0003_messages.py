"""The conversation moves from one JSON column on the pass (rewritten whole after every step)
to one row per turn (appended). Every pass's messages are carried into rows, in order and
unchanged, then the column goes: a column that stays but is never written would invite reads
of a stale conversation, and the rows are the one place it lives. Reversible: going back
rebuilds each pass's column from its rows."""

import django.db.models.deletion
from django.db import migrations, models

BATCH = 500


def carry_forwards(apps, schema_editor):
    Pass = apps.get_model("runs", "Pass")
    Message = apps.get_model("runs", "Message")
    rows = []
    for run_pass in Pass.objects.only("id", "messages").order_by("id").iterator(chunk_size=100):
        for index, message in enumerate(run_pass.messages or []):
            if set(message) != {"role", "content"}:
                # the engine only ever wrote role + content; anything else would be lost here
                raise ValueError(f"pass {run_pass.pk}, message {index}: unexpected keys {sorted(message)}")
            rows.append(Message(run_pass_id=run_pass.pk, index=index, role=message["role"], content=message["content"]))
        if len(rows) >= BATCH:
            Message.objects.bulk_create(rows)
            rows = []
    Message.objects.bulk_create(rows)


def carry_backwards(apps, schema_editor):
    Pass = apps.get_model("runs", "Pass")
    Message = apps.get_model("runs", "Message")
    for run_pass in Pass.objects.only("id").order_by("id").iterator(chunk_size=100):
        rows = Message.objects.filter(run_pass_id=run_pass.pk).order_by("index").values_list("role", "content")
        Pass.objects.filter(pk=run_pass.pk).update(
            messages=[{"role": role, "content": content} for role, content in rows]
        )


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0002_task_paths"),
    ]

    operations = [
        migrations.CreateModel(
            name="Message",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("index", models.PositiveIntegerField()),
                ("role", models.CharField(max_length=10)),
                ("content", models.JSONField()),
                (
                    "run_pass",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="message_rows", to="runs.pass"
                    ),
                ),
            ],
            options={
                "ordering": ["run_pass", "index"],
                "constraints": [
                    models.UniqueConstraint(fields=("run_pass", "index"), name="message_pass_index_unique")
                ],
            },
        ),
        migrations.RunPython(carry_forwards, carry_backwards),
        migrations.RemoveField(
            model_name="pass",
            name="messages",
        ),
    ]
