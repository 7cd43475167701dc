#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rysh_site.settings")
    from rysh_site.startup import database_missing

    # before the settings, which would make the data folder only for `auto` to fail in it
    if problem := database_missing(sys.argv):
        sys.exit(f"manage.py auto: {problem}")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
