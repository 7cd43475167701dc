"""Where a suite is shown on the dashboard (docs/evals.md): the link the API, the MCP server and
`eval.failed` notifications give."""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse

from evals.models import Suite, SuiteSide


def suite_path(suite: Suite) -> str:
    """The suite's own page when the site has one, else where its results are shown: a change
    request's Evals panel (side "change", or "main" run for a change), the recipe's page (its
    cases and their recent results), or the recipes list for a folder run with `auto eval PATH`
    (it has no page: its results are the command's answer and the API's)."""
    try:
        return reverse("suite_detail", args=[suite.pk])
    except NoReverseMatch:  # no page of its own: the panel or the recipe page shows it
        pass
    if suite.change_request_id:
        return reverse("change_detail", args=[suite.change_request_id]) + "#evals"
    if suite.side != SuiteSide.PATH and "/" in suite.target:
        kind, name = suite.target.split("/", 1)
        return reverse("recipe_detail", args=[kind, name]) + "#evals"
    return reverse("recipe_list")
