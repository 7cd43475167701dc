"""Runs of rysh's packages (docs/packages.md): an agent package runs with a person's prompt;
a recipe or loop package's entry runs as the recipe it is, with its arguments.

The run is armed with a recipe text built from the package's last good version (an agent's:
catalogue.packages.agent_recipe), stored on the run like any recipe's, and labelled with the
package (`name@version`) on its page and in the run list.
"""

from __future__ import annotations

from budgets.units import UnitError, parse_tokens
from catalogue.models import Package, PackageVersion
from catalogue.packages import MANIFEST_NAME, RecipeError, agent_recipe, read_package
from catalogue.packages import Package as PackageFiles
from runs.arming import UNTIL_OVERRIDE
from runs.models import Run
from runs.services import DryRun, RecipeSource, RunRefused, run_start, script_of


def package_for_run(name: str) -> tuple[Package, PackageVersion]:
    """The package and the version that runs: its last good one. Refused when there is none."""
    package = Package.objects.select_related("good", "latest").filter(name=name, archived=False).first()
    if package is None:
        raise RunRefused(
            f"no package named {name!r} in the catalogue (the folders under .rysh/packages/ of the recipes "
            "repository, synced with the recipes)"
        )
    if package.good is None:
        errors = "\n".join(package.latest.errors if package.latest else [])
        raise RunRefused(f"package {name} has no valid version to run:\n{errors}")
    return package, package.good


def package_files(version: PackageVersion) -> PackageFiles:
    """A stored version read again (it was valid when synced; the reader is pure and cheap)."""
    texts = {inner: "" for inner in version.files if inner.startswith("evals/")}
    texts[MANIFEST_NAME] = version.manifest_text
    texts[version.entry_path] = version.entry_text
    try:
        return read_package(version.package.name, texts)
    except RecipeError as exc:  # a reader grown stricter since the sync
        raise RunRefused(str(exc)) from None


def package_run_start(
    *,
    name: str,
    words: list[str],
    budget: str | None = None,
    until: str | None = None,
    user=None,
    provider: str | None = None,
    dry_run: bool = False,
) -> Run | DryRun:
    """Start a run of package `name`: for an agent, `words` are the prompt; for a recipe or
    loop package, its arguments. `budget`: the pass budget (else the package's own, else the
    default); `until`: a goal that makes the run a loop (an agent runs one pass without one)."""
    package, version = package_for_run(name)
    files = package_files(version)
    overrides = {}
    if budget:
        try:
            parse_tokens(budget)
        except UnitError as exc:
            raise RunRefused(f"--budget: {exc}") from None
        overrides["budget"] = budget
    if until:
        overrides[UNTIL_OVERRIDE] = until
    notes = []
    if package.latest_id != package.good_id:
        notes.append(
            f"the newest version of package {name} ({package.latest.commit_sha[:8]}) is broken; "
            f"running the last good version ({version.commit_sha[:8]})"
        )
    notes.append(f"package {version.label} at {version.commit_sha[:8]}")
    script = script_of(f"{package.path}/{version.entry_path}")  # offline: SKILL.script.yaml beside the entry
    if files.skill is not None:
        prompt = " ".join(words).strip()
        if not prompt:
            raise RunRefused(f'an agent runs with a prompt: auto agent run {name} "what it should do"')
        built = agent_recipe(files, prompt=prompt)
        source = RecipeSource(
            built.kind, built.name, built.path, built.text, notes=notes, package=version, script=script
        )
        args: list[str] = []
    else:
        spec = files.recipe
        path = f"{files.path}/{spec.name}.md"  # names the run: its stem is the recipe's name
        source = RecipeSource(
            str(spec.kind), spec.name, path, version.entry_text, notes=notes, package=version, script=script
        )
        args = list(words)
    return run_start(
        kind=source.kind,
        name_or_path=source.path,
        args=args,
        user=user,
        overrides=overrides,
        provider=provider,
        dry_run=dry_run,
        source=source,
    )
