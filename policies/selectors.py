"""Which policy governs a run now (docs/policy.md): the organisation's (the RYSH_ORG_POLICY
file, the admin's row) and the repository's newest synced `.rysh/policy.yaml`, merged. Any of
them that cannot be read stops every run from starting (fail closed)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from budgets.plan import resolve
from catalogue.plan_report import models_for, plan_lines
from catalogue.recipe.reader import RecipeError
from catalogue.repo import RepoError, redact
from catalogue.selectors import recipe_version_plan
from policies.ceilings import lower_plan
from policies.models import ORG_LABEL, OrgPolicy, PolicyVersion
from policies.rules import REPO_POLICY, Merged, Policy, merge, parse_policy
from policies.services import policy_catch_up


class PolicyBroken(Exception):
    """No run starts: a policy cannot be read. The message names the file, line and field."""


def repo_policy_version() -> PolicyVersion | None:
    """The newest `.rysh/policy.yaml` the catalogue's sync read of the tracked branch."""
    return PolicyVersion.objects.filter(
        repo=redact(settings.RYSH_RECIPES_REPO), branch=settings.RYSH_RECIPES_BRANCH
    ).first()


def _parsed(text: str, label: str) -> Policy:
    try:
        return parse_policy(text, label=label)
    except RecipeError as exc:
        raise PolicyBroken(f"the policy {label} does not parse, so no run starts:\n{exc}") from None


def org_policies() -> list[Policy]:
    """The organisation's policies: the RYSH_ORG_POLICY file (read now), the admin's row."""
    found = []
    path = settings.RYSH_ORG_POLICY
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PolicyBroken(
                f"RYSH_ORG_POLICY is {path}, which does not exist: no run starts without the "
                "organisation's policy (restore the file or unset the setting)"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyBroken(f"RYSH_ORG_POLICY {path} cannot be read ({exc}), so no run starts") from None
        found.append(_parsed(text, path))
    row = OrgPolicy.objects.first()
    if row is not None:
        found.append(_parsed(row.text, ORG_LABEL))
    return found


def effective_policy() -> Merged:
    """The merged policy a run starting now obeys; PolicyBroken when one cannot be read."""
    policies = org_policies()
    try:
        version = repo_policy_version() or policy_catch_up()
    except RepoError as exc:  # the synced commit's policy cannot be read: no run governed by guesswork
        raise PolicyBroken(f"the policy {REPO_POLICY} cannot be read from the recipes repository ({exc})") from None
    if version is not None and version.present:
        if not version.valid:
            errors = "\n".join(version.errors)
            raise PolicyBroken(
                f"the policy {REPO_POLICY} at {version.commit_sha[:8]} does not parse, so no run starts:\n{errors}"
            )
        policies.append(_parsed(version.text, REPO_POLICY))
    return merge(policies)


@dataclass(frozen=True)
class Overview:
    """What the policy page shows."""

    merged: Merged | None
    broken: str
    version: PolicyVersion | None
    org_file: str
    org_row: OrgPolicy | None


def policy_overview() -> Overview:
    try:
        merged, broken = effective_policy(), ""
    except PolicyBroken as exc:
        merged, broken = None, str(exc)
    return Overview(merged, broken, repo_policy_version(), settings.RYSH_ORG_POLICY, OrgPolicy.objects.first())


def policy_for_run(plan):
    """(the plan under the policy's ceilings, the merged policy with what it did noted) for a
    run starting now; PolicyBroken when a policy cannot be read."""
    policy = effective_policy()
    lowered, notes = lower_plan(plan, policy)
    return lowered, dataclasses.replace(policy, notes=tuple(notes))


def policed_version_plan(version) -> tuple[object, list[str]]:
    """A recipe version's spec and plan lines as a run of it would start now: lowered by the
    policy's ceilings, with the rules that did it (the recipe page, docs/policy.md)."""
    spec, lines = recipe_version_plan(version)
    if spec is None:
        return spec, lines
    try:
        plan, policy = policy_for_run(resolve(spec.do, spec.loop_while))
    except PolicyBroken as exc:
        return spec, [*lines, "", *(f"policy: {line}" for line in str(exc).splitlines())]
    if not policy.notes:
        return spec, lines
    executor, judge = models_for(spec)
    return spec, [*plan_lines(spec, plan, executor=executor, judge=judge), "", *policy.notes]
