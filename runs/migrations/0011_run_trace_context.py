from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0010_worker_beat"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="trace_context",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
