"""git -> the catalogue's packages: a Package and its PackageVersions from the folders under
`.rysh/packages/` at the tracked branch's head (docs/packages.md).

Called by the recipes sync in its transaction, after it moved to a new head: each package
folder whose files differ from its latest version's gets a version at the head commit. A
version that does not read is kept (its errors shown) but never replaces the last good one,
which is what runs. A folder gone from the head archives its package.
"""

from __future__ import annotations

import yaml

from catalogue.models import Package, PackageVersion
from catalogue.packages import MANIFEST_NAME, PACKAGES_DIR, eval_cases, package_folder, read_package
from catalogue.packages import Package as PackageFiles
from catalogue.recipe import RecipeError, RecipeIssue
from catalogue.repo import GitRepo

MAX_PACKAGE_FILE = 256 * 1024  # as a recipe: a manifest or an agent's instructions is a page


def packages_sync(git: GitRepo, head: str) -> int:
    """Bring the packages to `head`; the number of packages created, changed or archived."""
    folders: dict[str, dict[str, str]] = {}
    for path, blob in git.tree(head, under=PACKAGES_DIR).items():
        found = package_folder(path)
        if found is not None:
            folders.setdefault(found[0], {})[found[1]] = blob
    known = {p.name: p for p in Package.objects.select_related("latest")}
    changed = 0
    commit = None
    for name, files in sorted(folders.items()):
        package = known.get(name)
        if package is not None and package.latest is not None and package.latest.files == files:
            if package.archived:
                Package.objects.filter(pk=package.pk).update(archived=False)
                changed += 1
            continue
        commit = commit or git.commit(head)
        _add_version(git, package or Package.objects.create(name=name), files, commit)
        changed += 1
    gone = Package.objects.filter(archived=False).exclude(name__in=list(folders))
    return changed + gone.update(archived=True)


def _add_version(git: GitRepo, package: Package, files: dict[str, str], commit) -> None:
    wanted = [inner for inner in files if not inner.startswith("evals/")]
    blobs = git.read_blobs(files[inner] for inner in wanted)
    texts, problems = {}, []
    for inner in wanted:
        data = blobs.get(files[inner], b"")
        if len(data) > MAX_PACKAGE_FILE:
            problems.append(
                RecipeIssue(inner, None, "file", f"expected at most {MAX_PACKAGE_FILE:,} bytes, got {len(data):,}")
            )
            continue
        try:
            texts[inner] = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(RecipeIssue(inner, None, "file", f"is not UTF-8 text ({exc.reason} at byte {exc.start})"))
    texts.update({inner: "" for inner in files if inner.startswith("evals/")})
    fields = _parsed(package.name, texts, problems)
    version, _ = PackageVersion.objects.update_or_create(
        package=package,
        commit_sha=commit.sha,
        defaults=dict(
            author=commit.author,
            committed_at=commit.date,
            message=commit.message,
            files=files,
            manifest_text=texts.get(MANIFEST_NAME, ""),
            **fields,
        ),
    )
    package.latest = version
    if version.valid:
        package.good = version
    package.archived = False
    package.save(update_fields=["latest", "good", "archived"])


def _parsed(folder: str, texts: dict[str, str], problems: list[RecipeIssue]) -> dict:
    entry_path = _entry_named(texts.get(MANIFEST_NAME, ""))
    base = {"entry_path": entry_path, "entry_text": texts.get(entry_path, "")}
    if problems:
        return {**base, "valid": False, "errors": [str(i) for i in problems], "info": _as_written(texts)}
    try:
        package = read_package(folder, texts)
    except RecipeError as exc:
        return {**base, "valid": False, "errors": [str(i) for i in exc.issues], "info": _as_written(texts)}
    return {**base, "valid": True, "errors": [], "info": package_info(package)}


def _as_written(texts: dict[str, str]) -> dict:
    """What a manifest that does not read says, read leniently, so the pages can show the tools
    it declares (the ones we lack marked) beside its errors."""
    try:
        loaded = yaml.safe_load(texts.get(MANIFEST_NAME, "")) or {}
    except yaml.YAMLError:
        loaded = {}
    if not isinstance(loaded, dict):
        return {}
    tools = loaded.get("declares_tools")
    return {
        "tools": [str(t) for t in tools] if isinstance(tools, list) else [],
        "evals": list(eval_cases(texts)),
        "type": str(loaded.get("type", "")),
    }


def _entry_named(manifest_text: str) -> str:
    """The entry a manifest names, read leniently (a broken manifest still shows its entry)."""
    for line in manifest_text.split("\n"):
        if line.startswith("entry:"):
            return line.split(":", 1)[1].strip().strip("'\"")
    return "SKILL.md"


def package_info(package: PackageFiles) -> dict:
    """What the pages and a run need of a valid package, as stored on its version."""
    manifest, skill = package.manifest, package.skill
    info = {
        "name": manifest.name,
        "version": manifest.version,
        "type": manifest.type,
        "description": manifest.description or (skill.description if skill else ""),
        "entry": manifest.entry,
        "tools": list(manifest.declares_tools),
        "evals": list(package.evals),
    }
    if skill is not None:
        info["agent"] = {
            "name": skill.name,
            "model": skill.model,
            "worktree": skill.worktree,
            "auto_approve": skill.auto_approve,
        }
    if package.recipe is not None:
        info["kind"] = str(package.recipe.kind)
        info["args"] = list(package.recipe.args)
    return info
