"""Writing what the catalogue's sync read of `.rysh/policy.yaml` (docs/policy.md)."""

from __future__ import annotations

from django.conf import settings

from catalogue.models import RepoState
from catalogue.repo import GitRepo, open_repo, redact
from policies.models import PolicyVersion
from policies.rules import REPO_POLICY, policy_issues
from reviews.models import ChangeRequest
from reviews.repo_files import POLICY, change_request_open_file


def policy_sync(*, git: GitRepo, repo: str, branch: str, head: str) -> PolicyVersion:
    """`.rysh/policy.yaml` as the synced head has it; a new PolicyVersion when it changed (a
    file that is added, edited or removed), else the newest one stands."""
    text = git.read_file(head, REPO_POLICY)
    latest = PolicyVersion.objects.filter(repo=repo, branch=branch).first()
    present = text is not None
    if latest is not None and latest.present == present and latest.text == (text or ""):
        return latest
    errors = [str(issue) for issue in policy_issues(text)] if present else []
    return PolicyVersion.objects.create(
        repo=repo, branch=branch, commit_sha=head, present=present, text=text or "", valid=not errors, errors=errors
    )


def policy_catch_up() -> PolicyVersion | None:
    """The policy at the commit the catalogue last synced, read now when no sync has read it
    yet (a dashboard upgraded to policies over a repository already synced): a policy in the
    repository is never skipped because nothing was pushed since. None: nothing synced yet."""
    repo, branch = redact(settings.RYSH_RECIPES_REPO), settings.RYSH_RECIPES_BRANCH
    state = RepoState.objects.filter(repo=repo, branch=branch).exclude(synced_sha="").first()
    if state is None:
        return None
    git = open_repo(settings.RYSH_RECIPES_REPO)
    return policy_sync(git=git, repo=repo, branch=branch, head=state.synced_sha)


def policy_change_open(*, user, text: str, message: str = "") -> ChangeRequest:
    """An edit of `.rysh/policy.yaml` (its creation when the tracked branch has none) on a review
    branch: reviewed and merged like a recipe (docs/policy.md)."""
    git = open_repo(settings.RYSH_RECIPES_REPO)
    branch = settings.RYSH_RECIPES_BRANCH
    git.refresh(branch)
    create = git.read_file(git.head(branch), REPO_POLICY) is None
    return change_request_open_file(
        user=user, kind=POLICY, name="policy", path=REPO_POLICY, text=text, message=message, create=create
    )
