"""A change request that would break the policy file (docs/policy.md): merged, it would stop
every run from starting, so the review shows its errors and the merge waits (reviews'
MERGE_CHECKS port, filled in PoliciesConfig.ready)."""

from __future__ import annotations

from catalogue.recipe import RecipeError
from policies.rules import REPO_POLICY, merge, parse_policy, policy_issues
from policies.selectors import PolicyBroken, org_policies
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


def _rules_of(text: str | None) -> list[str] | None:
    """The merged policy's rules in words with `text` as the repository's file (the
    organisation's policies included); None when one of them does not parse."""
    try:
        policies = org_policies()
        if text:
            policies.append(parse_policy(text))
    except (PolicyBroken, RecipeError):
        return None
    return merge(policies).lines()


def _without_where(line: str) -> str:
    """`pass ceiling 2b  (.rysh/policy.yaml:4 budget.ceilings.pass)` -> `pass ceiling 2b`: a rule
    that only moved to another line is not a change."""
    return line.rsplit("  (", 1)[0]


def policy_change_facts(change: ChangeRequest) -> dict:
    """What a policy change does (the review page): the merged policy's rules before and after,
    each marked when the other side lacks it, and the proposed file's errors at their lines."""
    before, after = _rules_of(change.base_text), _rules_of(change.proposed_text)
    old = {_without_where(line) for line in before or ()}
    new = {_without_where(line) for line in after or ()}
    return {
        "policy_before": [(line, _without_where(line) not in new) for line in before or ()],
        "policy_after": [(line, _without_where(line) not in old) for line in after or ()],
        "policy_before_broken": before is None,
        "policy_after_broken": after is None,
        "file_issues": [str(issue) for issue in policy_issues(change.proposed_text)] if change.proposed_text else [],
    }


def policy_text_check(text: str) -> dict:
    """The editor's live check of `.rysh/policy.yaml`: its errors at their lines, else the
    merged policy's rules as they would be."""
    issues = [{"line": i.line, "field": i.field, "message": i.message} for i in policy_issues(text)]
    rules = [] if issues else _rules_of(text)
    preview = rules if rules else ["no rules: runs are shaped by their recipes alone"]
    return {"issues": issues, "preview": [] if issues else preview, "warnings": [], "delta": None}
