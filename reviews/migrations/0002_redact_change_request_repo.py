"""Change requests kept their repository's location as configured, a token in its URL
included (`https://user:token@host/…`): keep it redacted (`https://***@host/…`), as
catalogue.repo.redact shows it. Opening one takes the token from the settings again."""

import re

from django.db import migrations

# catalogue.repo's _USERINFO_RE, as it is today (a migration does not follow later edits)
USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)([^/\s'\"<>]*)@", re.IGNORECASE)


def redact_locations(apps, schema_editor):
    ChangeRequest = apps.get_model("reviews", "ChangeRequest")
    for pk, repo in ChangeRequest.objects.filter(repo__contains="@").values_list("pk", "repo"):
        shown = USERINFO.sub(r"\1***@", repo)
        if shown != repo:
            ChangeRequest.objects.filter(pk=pk).update(repo=shown)


class Migration(migrations.Migration):
    dependencies = [("reviews", "0001_initial")]

    # not reversible to the token: going back leaves the locations redacted
    operations = [migrations.RunPython(redact_locations, migrations.RunPython.noop)]
