"""Change requests for the repository's files that are not recipes but are reviewed like them
(docs/packages.md, docs/policy.md): a package's manifest or entry file, and the team's policy
file. Each request changes ONE file; `kind` says which sort ("package" or "policy"), `name` is
the package's folder (or "policy"), `path` / `new_path` the file.

Opening, revising and merging are the recipes' (reviews/services.py); what differs is the
reader that checks the file, here for packages and in policies/review_checks.py for the policy
(reviews sits below policies and never imports it).
"""

from __future__ import annotations

import yaml

from catalogue.packages import MANIFEST_NAME, PACKAGES_DIR, TOOL_MEANING, package_folder, read_package
from catalogue.recipe import NAME_RE, RecipeError, RecipeIssue
from catalogue.repo import GitRepo
from reviews.models import ChangeRequest
from reviews.services import ReviewError, _open_file, _tracked, change_request_repo, normalize_text
from rysh_site.roles import require

PACKAGE = "package"
POLICY = "policy"
REPO_FILE_KINDS = (PACKAGE, POLICY)
NOT_AVAILABLE = "not available here"


def is_repo_file(change: ChangeRequest) -> bool:
    """A change of a package's or the policy's file, not of a recipe."""
    return change.kind in REPO_FILE_KINDS


def change_request_open_file(
    *, user, kind: str, name: str, path: str, text: str, message: str, create: bool = False
) -> ChangeRequest:
    """One file of the repository (a package's, the policy) committed to a review branch.
    `create`: the file must not exist yet; otherwise it must, and the text must differ."""
    require(user, "edit")
    if kind not in REPO_FILE_KINDS:
        raise ReviewError(f"kind must be {' or '.join(REPO_FILE_KINDS)}, got {kind!r}")
    git, branch, base = _tracked()
    base_text = git.read_file(base, path)
    if create and base_text is not None:
        raise ReviewError(f"{path} already exists on {branch}; edit it instead")
    if not create and base_text is None:
        raise ReviewError(f"{path} is not on {branch} any more")
    text = normalize_text(text)
    if text == base_text:
        raise ReviewError("nothing changed: the text is the same as on the tracked branch")
    return _open_file(
        git,
        user=user,
        kind=kind,
        name=name,
        path=path,
        base=base,
        before=base_text,
        files={path: text},
        message=message or f"{'Create' if create else 'Edit'} {path}",
    )


# --- packages ----------------------------------------------------------------------------------


def package_file_path(name: str, which: str, manifest_text: str) -> str:
    """The path of a package's manifest (`which` "manifest") or entry file ("entry"), the entry
    as its manifest names it (read leniently: a broken manifest still names its entry)."""
    if not NAME_RE.match(name or ""):
        raise ReviewError(f"{name!r} is not a package folder's name")
    if which == "manifest":
        return f"{PACKAGES_DIR}/{name}/{MANIFEST_NAME}"
    if which != "entry":
        raise ReviewError(f"a package's files are its manifest and its entry, not {which!r}")
    entry = _lenient(manifest_text).get("entry")
    entry = entry.strip() if isinstance(entry, str) and entry.strip() else "SKILL.md"
    if ".." in entry.split("/") or entry.startswith("/"):
        raise ReviewError(f"the manifest's entry {entry!r} leaves the package folder")
    return f"{PACKAGES_DIR}/{name}/{entry}"


def package_change_open(*, user, name: str, which: str, text: str, message: str = "") -> ChangeRequest:
    """An edit of a package's manifest or entry, on a review branch."""
    git, _branch, base = _tracked()
    manifest = git.read_file(base, f"{PACKAGES_DIR}/{name}/{MANIFEST_NAME}")
    if manifest is None:
        raise ReviewError(f"there is no package {name!r} on the tracked branch")
    path = package_file_path(name, which, manifest)
    return change_request_open_file(user=user, kind=PACKAGE, name=name, path=path, text=text, message=message)


def package_texts(git: GitRepo, sha: str, name: str) -> dict[str, str] | None:
    """The package folder at a commit: path inside it -> text (an eval case's files as "", only
    their names count); None when the folder is not there."""
    blobs = {}
    for path, blob in git.tree(sha, under=f"{PACKAGES_DIR}/{name}").items():
        found = package_folder(path)
        if found is not None and found[0] == name:
            blobs[found[1]] = blob
    if not blobs:
        return None
    read = git.read_blobs(b for inner, b in blobs.items() if not inner.startswith("evals/"))
    return {
        inner: "" if inner.startswith("evals/") else read.get(blob, b"").decode("utf-8", "replace")
        for inner, blob in blobs.items()
    }


def package_issues(name: str, files: dict[str, str]) -> list[RecipeIssue]:
    """What the package reader says of the folder, each issue named by its path in the repository
    (`.rysh/packages/x/SKILL.md:1 name: …`); [] when it reads."""
    try:
        read_package(name, files)
    except RecipeError as exc:
        where = f"{PACKAGES_DIR}/{name}/"
        return [i if i.path.startswith(PACKAGES_DIR) else _moved(i, where + i.path) for i in exc.issues]
    return []


def _moved(issue: RecipeIssue, path: str) -> RecipeIssue:
    return RecipeIssue(path, issue.line, issue.field, issue.message, issue.column)


def package_text_check(name: str, path: str, text: str, *, base: dict[str, str] | None) -> dict:
    """The editor's live check of one package file: the folder as it would be with `text` in
    place of `path`, read by the package reader. Issues in this file keep their line; issues in
    the folder's other files say their file in the message."""
    inner = path.removeprefix(f"{PACKAGES_DIR}/{name}/")
    files = {**(base or {}), inner: normalize_text(text)}
    issues = []
    for issue in package_issues(name, files):
        mine = issue.path == path
        message = issue.message if mine else f"{issue.message} (in {issue.path})"
        issues.append({"line": issue.line if mine else None, "field": issue.field, "message": message})
    facts = package_facts(files)
    preview = [f"{label}: {facts[key] or '—'}" for key, label in (("version", "version"), ("type", "type"))]
    preview.append("tools: " + (", ".join(t for t, _ in facts["tools"]) or "none"))
    return {"issues": issues, "preview": [] if issues else preview, "warnings": [], "delta": None}


def _lenient(manifest_text: str) -> dict:
    try:
        loaded = yaml.safe_load(manifest_text or "")
    except yaml.YAMLError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def package_facts(files: dict[str, str] | None) -> dict:
    """Version, type and declared tools as the manifest writes them (read leniently, so a broken
    one still shows them), each tool with whether it is available here."""
    loaded = _lenient((files or {}).get(MANIFEST_NAME, ""))
    tools = loaded.get("declares_tools")
    tools = [str(t) for t in tools] if isinstance(tools, list) else []
    return {
        "version": str(loaded.get("version", "") or ""),
        "type": str(loaded.get("type", "") or ""),
        "tools": [(tool, tool in TOOL_MEANING) for tool in tools],
    }


def package_change_facts(change: ChangeRequest) -> dict:
    """What the review page shows of a package change: the reader's issues with the change, and
    version, type and tools before and after (rows of label, before, after, changed)."""
    git = change_request_repo(change)
    before = package_texts(git, change.base_sha, change.name)
    after = package_texts(git, change.head_sha, change.name) if change.head_sha else None
    b, a = package_facts(before), package_facts(after)
    tools = lambda facts: ", ".join(t if ok else f"{t} ({NOT_AVAILABLE})" for t, ok in facts["tools"])  # noqa: E731
    rows = [
        ("version", b["version"], a["version"]),
        ("type", b["type"], a["type"]),
        ("tools", tools(b), tools(a)),
    ]
    return {
        "package_rows": [(label, old, new, old != new) for label, old, new in rows],
        "unavailable_tools": [t for t, ok in a["tools"] if not ok],
        "file_issues": [str(i) for i in package_issues(change.name, after)] if after is not None else [],
    }


def package_merge_blockers(change: ChangeRequest) -> list[str]:
    """A package change whose folder does not read as a package cannot merge: merged, the
    package's newest version would be invalid (the MERGE_CHECKS port, ReviewsConfig.ready)."""
    if change.kind != PACKAGE or not change.head_sha or not change.is_open:
        return []
    after = package_texts(change_request_repo(change), change.head_sha, change.name)
    if after is None:
        return [f"the package folder {PACKAGES_DIR}/{change.name}/ is gone on this change's branch"]
    return [f"{issue} (this change's package does not read)" for issue in package_issues(change.name, after)]
