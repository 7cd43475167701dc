"""A change request that would break the policy file (docs/policy.md): merged, it would stop
every run from starting, so the review shows its errors and the merge waits (reviews'
MERGE_CHECKS port, filled in PoliciesConfig.ready)."""

from __future__ import annotations

from policies.rules import REPO_POLICY, policy_issues
from reviews.models import ChangeRequest
from reviews.services import change_request_repo


def policy_merge_blockers(change: ChangeRequest) -> list[str]:
    """The errors of the change's `.rysh/policy.yaml` when the change alters it and it does not
    parse; [] otherwise."""
    if not change.head_sha:
        return []
    git = change_request_repo(change)
    after = git.read_file(change.head_sha, REPO_POLICY)
    if after is None or after == git.read_file(change.base_sha, REPO_POLICY):
        return []
    return [
        f"{issue} (this change's {REPO_POLICY} does not parse; merged, it would stop every run)"
        for issue in policy_issues(after)
    ]
