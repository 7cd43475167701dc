"""Seed what `make run` needs on a fresh machine: the demo recipe repository, a first sync of
the recipe catalogue, the every-minute sync schedule, and a login.

Idempotent: an existing repository or any existing user is left alone; the sync and the
schedule are safe to repeat.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from catalogue.repo import RepoError, is_remote
from catalogue.sync import recipes_sync
from catalogue.tasks import ensure_sync_schedule

DEMO_SOURCE = Path(settings.BASE_DIR) / "demo" / "recipes"
GIT_AUTHOR = ["-c", "user.name=rysh demo", "-c", "user.email=demo@rysh.invalid"]


DEMO_ROLES = (("reviewer", "editor"), ("operator", "operator"), ("viewer", "viewer"))


class Command(BaseCommand):
    help = "Create the demo recipe repository (when none is configured) and a demo login."

    def handle(self, *args, **options):
        if is_remote(settings.RYSH_RECIPES_REPO):
            self.stdout.write(f"recipes: {settings.RYSH_RECIPES_REPO}")
        else:
            self._seed_repository(Path(settings.RYSH_RECIPES_REPO))
        self._sync()
        self._seed_login(Path(settings.DATA_DIR) / "demo-login")

    def _sync(self) -> None:
        ensure_sync_schedule()
        try:
            self.stdout.write(recipes_sync().line())
        except RepoError as exc:  # the schedule tries again every minute
            self.stderr.write(f"recipes: not synced yet: {exc}")

    def _seed_repository(self, repo: Path) -> None:
        if repo.exists():
            self.stdout.write(f"recipes: {repo}")
            return
        shutil.copytree(DEMO_SOURCE, repo)
        branch = settings.RYSH_RECIPES_BRANCH
        for command in (
            ["init", "-q", "-b", branch],
            ["add", "-A"],
            [*GIT_AUTHOR, "commit", "-q", "-m", "Demo recipes"],
        ):
            subprocess.run(["git", "-C", str(repo), *command], check=True)
        self.stdout.write(f"recipes: created the demo repository at {repo}")

    def _seed_login(self, remembered: Path) -> None:
        User = get_user_model()
        if remembered.exists() and User.objects.filter(username="demo").exists():
            for line in remembered.read_text().strip().splitlines():
                self.stdout.write(f"login:   {line}")
            return
        if User.objects.exists():
            return  # a real team is here; never add a known login beside it
        password = secrets.token_urlsafe(9)
        User.objects.create_superuser("demo", "demo@rysh.invalid", password)
        lines = [f"demo / {password}   (admin)"]
        # one demo login per role, so a second person can review and roles can be tried
        for username, role in DEMO_ROLES:
            user = User.objects.create_user(username, f"{username}@rysh.invalid", password)
            user.groups.add(Group.objects.get_or_create(name=role)[0])
            lines.append(f"{username} / {password}   ({role})")
        remembered.touch(mode=0o600)
        remembered.write_text("\n".join(lines) + "\n")
        for line in lines:
            self.stdout.write(f"login:   {line}")
        self.stdout.write(f"         (created; kept in {remembered})")
