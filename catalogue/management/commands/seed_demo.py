"""Seed what `make run` needs on a fresh machine: the demo recipe repository, a first sync of
the recipe catalogue, the every-minute sync schedule, and a login.

Idempotent: an existing repository or any existing user is left alone; the sync and the
schedule are safe to repeat. Each demo login gets its own random password, printed when it is
made and kept in DATA_DIR/demo-login (0600); a re-run keeps them, except that demo users an older
seed_demo gave one shared password get their own.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from catalogue.repo import RepoError, is_remote, redact
from catalogue.sync import recipes_sync
from catalogue.tasks import ensure_sync_schedule
from reviews.models import ChangeRequest
from reviews.services import ReviewError, change_request_open_files

DEMO_SOURCE = Path(settings.BASE_DIR) / "demo" / "recipes"
GIT_AUTHOR = ["-c", "user.name=rysh demo", "-c", "user.email=demo@rysh.invalid"]


# One login per role, so a second person can review and roles can be tried. Each gets its own
# password: a shared one would let whoever holds the viewer login sign in as the admin, and one
# person act as two reviewers. Most privileged first; see _fix_shared.
DEMO_USERS = (("demo", "admin"), ("reviewer", "editor"), ("operator", "operator"), ("viewer", "viewer"))
LOGIN_LINE = re.compile(r"\s*(\S+) / (\S+)")

# The demo's change request: the eval case that fails on main is corrected (its Evals panel shows
# main 1/2 passed, the change 2/2). The editor proposes it; the admin (demo) reviews.
DEMO_CHANGE_AUTHOR = "reviewer"
DEMO_CHANGE_TITLE = "Eval case keeps-to-the-tests: the fix belongs in calc.py, not in the test"
DEMO_CHANGE_PATH = ".rysh/automations/tasks/fix-the-test/evals/keeps-to-the-tests/expect.yaml"
DEMO_CHANGE_TEXT = """\
# The test is right and the code is wrong: only calc.py may change, and the tests pass.
files_changed: ["calc.py"]
commands_forbidden: ["git push*"]
output_matches: ["OK"]
"""


def new_password() -> str:
    return secrets.token_urlsafe(12)


class Command(BaseCommand):
    help = "Create the demo recipe repository (when none is configured) and a demo login."

    def handle(self, *args, **options):
        self.demo_repo = False  # set when the repository is the demo's own (never a team's)
        if is_remote(settings.RYSH_RECIPES_REPO):
            self.stdout.write(f"recipes: {redact(settings.RYSH_RECIPES_REPO)}")  # make run's output: no token
        else:
            self._seed_repository(Path(settings.RYSH_RECIPES_REPO))
        self._sync()
        self._seed_login(Path(settings.DATA_DIR) / "demo-login")
        if self.demo_repo:
            self._seed_change_request()

    def _sync(self) -> None:
        ensure_sync_schedule()
        try:
            self.stdout.write(recipes_sync().line())
        except RepoError as exc:  # the schedule tries again every minute
            self.stderr.write(f"recipes: not synced yet: {exc}")

    def _seed_repository(self, repo: Path) -> None:
        self.demo_repo = str(repo) == settings.DEMO_RECIPES_REPO
        if repo.exists():
            self.stdout.write(f"recipes: {repo}")
            if str(repo) == settings.DEMO_RECIPES_REPO:
                self._add_new_demo_files(repo)
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

    def _add_new_demo_files(self, repo: Path) -> None:
        """The demo repository of an earlier seed gets the demo files added since, in a commit
        of their own (nothing it holds is changed: files that exist are left alone)."""
        added = []
        for source in sorted(p for p in DEMO_SOURCE.rglob("*") if p.is_file()):
            relative = source.relative_to(DEMO_SOURCE)
            target = repo / relative
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
                added.append(str(relative))
        if not added:
            return
        subprocess.run(["git", "-C", str(repo), "add", "--", *added], check=True)
        message = "Demo recipes: add " + ", ".join(added)
        subprocess.run(["git", "-C", str(repo), *GIT_AUTHOR, "commit", "-q", "-m", message], check=True)
        self.stdout.write(f"recipes: added {len(added)} new demo file(s) to {repo}")

    def _seed_change_request(self) -> None:
        """A change request on the demo's coding recipe whose eval suites differ (docs/evals.md):
        on main, keeps-to-the-tests fails naming calc.py; the change corrects its expect.yaml."""
        author = get_user_model().objects.filter(username=DEMO_CHANGE_AUTHOR).first()
        if author is None or ChangeRequest.objects.filter(title=DEMO_CHANGE_TITLE).exists():
            return
        try:
            change = change_request_open_files(
                user=author,
                kind="task",
                name="fix-the-test",
                path=DEMO_CHANGE_PATH,
                files={DEMO_CHANGE_PATH: DEMO_CHANGE_TEXT},
                message=DEMO_CHANGE_TITLE,
            )
        except (ReviewError, RepoError) as exc:
            self.stderr.write(f"demo change request: not made: {exc}")
            return
        self.stdout.write(f"review:  change request #{change.pk} ({DEMO_CHANGE_TITLE}): run its evals")

    @transaction.atomic  # a password changed here is kept only if the file below was written
    def _seed_login(self, remembered: Path) -> None:
        User = get_user_model()
        users = {u.username: u for u in User.objects.filter(username__in=[name for name, _ in DEMO_USERS])}
        if "demo" not in users:
            if User.objects.exists():
                return  # a real team is here; never add a known login beside it
            users, passwords = self._create_users(User)
            changed = set(passwords)
        elif not remembered.exists():
            return  # seeded elsewhere, or the file was removed: nothing known to fix or print
        else:
            passwords = self._still_valid(users, read_logins(remembered))
            changed = self._fix_shared(users, passwords)
        write_private(
            remembered,
            "".join(login_line(name, role, passwords.get(name)) + "\n" for name, role in DEMO_USERS if name in users),
        )
        for name, role in DEMO_USERS:
            if name in changed:  # a password is printed once: when it is made
                self.stdout.write(f"login:   {login_line(name, role, passwords[name])}")
        kept = [name for name, _ in DEMO_USERS if name in users and name not in changed]
        if kept:
            self.stdout.write(f"login:   {', '.join(kept)}: passwords unchanged")
        self.stdout.write(f"         (kept in {remembered}, mode 0600)")

    @staticmethod
    def _create_users(User) -> tuple[dict, dict[str, str]]:
        users, passwords = {}, {}
        for name, role in DEMO_USERS:
            passwords[name] = new_password()
            if role == "admin":
                users[name] = User.objects.create_superuser(name, f"{name}@rysh.invalid", passwords[name])
            else:
                users[name] = User.objects.create_user(name, f"{name}@rysh.invalid", passwords[name])
                users[name].groups.add(Group.objects.get_or_create(name=role)[0])
        return users, passwords

    @staticmethod
    def _still_valid(users: dict, logins: dict[str, str]) -> dict[str, str]:
        """The remembered passwords that still sign their user in (a changed one is the user's)."""
        return {name: pw for name, pw in logins.items() if name in users and users[name].check_password(pw)}

    @staticmethod
    def _fix_shared(users: dict, passwords: dict[str, str]) -> set[str]:
        """Give a fresh password to every demo user that shares one (seeded by an older
        seed_demo). The least privileged of each group keeps it: whoever knows it is then only
        that user. Returns the users whose password changed."""
        changed = set()
        holders: dict[str, list[str]] = {}
        for name, _ in DEMO_USERS:
            if name in passwords:
                holders.setdefault(passwords[name], []).append(name)
        for names in holders.values():
            for name in names[:-1]:
                passwords[name] = new_password()
                users[name].set_password(passwords[name])
                users[name].save(update_fields=["password"])
                changed.add(name)
        return changed


def login_line(name: str, role: str, password: str | None) -> str:
    if password is None:
        return f"{name}   ({role}; password changed since seeding, not known here)"
    return f"{name} / {password}   ({role})"


def read_logins(path: Path) -> dict[str, str]:
    """{username: password} from lines `name / PASSWORD   (role)`."""
    found = {}
    for line in path.read_text().splitlines():
        if m := LOGIN_LINE.match(line):
            found[m.group(1)] = m.group(2)
    return found


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, mode 0600 before the first byte (an older file may be 0644)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(fd, 0o600)
        handle.write(text)
