"""Writing what the catalogue's sync read of `.rysh/policy.yaml` (docs/policy.md)."""

from __future__ import annotations

from catalogue.repo import GitRepo
from policies.models import PolicyVersion
from policies.rules import REPO_POLICY, policy_issues


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
