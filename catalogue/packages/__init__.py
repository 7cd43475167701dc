"""rysh's packages (docs/packages.md): a folder `.rysh/packages/<name>/` holding `rysh.pkg.yaml`
(the manifest), its entry file and optional `evals/<case>/` folders.

An **agent** package's entry is a `SKILL.md` (skill.py); a **recipe** or **loop** package's entry
is a recipe file (front matter of recipe keys, no `kind`: web when it has url/web_read/
web_profile, code when it has workdir, else task). `read_package` reads one folder's files into
a Package or raises RecipeError with every issue (file, line, field, expected).

The reader (this module, manifest, skill, tools) is pure: stdlib + PyYAML, no Django, no I/O;
`views` is the packages' pages, an edge on top of it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from catalogue.packages.manifest import MANIFEST_NAME, Manifest, read_manifest
from catalogue.packages.skill import Skill, read_skill
from catalogue.packages.tools import BROWSER_TOOL, CODING_TOOLS, KNOWN_TOOLS, TOOL_MEANING
from catalogue.recipe import NAME_RE, RecipeError, RecipeIssue, parse_recipe
from catalogue.spec import Kind, RecipeSpec

PACKAGES_DIR = ".rysh/packages"
WEB_KEYS = ("url", "web_read", "web_profile", "record")

__all__ = [
    "KNOWN_TOOLS",
    "MANIFEST_NAME",
    "PACKAGES_DIR",
    "TOOL_MEANING",
    "Manifest",
    "Package",
    "RecipeError",
    "Skill",
    "agent_recipe",
    "package_folder",
    "read_package",
    "recipe_kind",
]


@dataclass(frozen=True)
class Package:
    folder: str  # the folder's name under .rysh/packages/
    manifest: Manifest
    skill: Skill | None = None  # an agent package's
    recipe: RecipeSpec | None = None  # a recipe or loop package's
    evals: tuple[str, ...] = ()  # the names of its evals/<case>/ folders

    @property
    def path(self) -> str:
        return f"{PACKAGES_DIR}/{self.folder}"

    @property
    def entry_path(self) -> str:
        return f"{self.path}/{self.manifest.entry}"


def package_folder(path: str) -> tuple[str, str] | None:
    """(folder, path inside it) for a file under .rysh/packages/<folder>/, else None."""
    if not path.startswith(PACKAGES_DIR + "/"):
        return None
    rest = path[len(PACKAGES_DIR) + 1 :]
    folder, _, inner = rest.partition("/")
    return (folder, inner) if folder and inner else None


def eval_cases(files: Mapping[str, object]) -> tuple[str, ...]:
    """The names of the `evals/<case>/` folders among a package folder's file paths."""
    cases = {inner.split("/")[1] for inner in files if inner.startswith("evals/") and inner.count("/") >= 2}
    return tuple(sorted(cases))


def read_package(folder: str, files: Mapping[str, str]) -> Package:
    """One package folder: `files` maps paths inside the folder (`rysh.pkg.yaml`, `SKILL.md`,
    `evals/x/task.md`) to their text (or "" when only the path matters)."""
    where = f"{PACKAGES_DIR}/{folder}"
    if MANIFEST_NAME not in files:
        raise RecipeError(
            [RecipeIssue(folder, None, MANIFEST_NAME, f"missing: a package folder holds {MANIFEST_NAME}")]
        )
    manifest = read_manifest(files[MANIFEST_NAME], path=f"{where}/{MANIFEST_NAME}")
    if not NAME_RE.match(folder):
        raise RecipeError(
            [
                RecipeIssue(
                    folder,
                    None,
                    "folder",
                    f"expected a folder name of lowercase letters, digits, '.', '_' or '-', got {folder!r}",
                )
            ]
        )
    entry = files.get(manifest.entry)
    if entry is None:
        raise RecipeError(
            [
                RecipeIssue(
                    MANIFEST_NAME,
                    manifest.entry_line,
                    "entry",
                    f"{manifest.entry!r} is not in the package folder {where}/: add it or name the file it has",
                )
            ]
        )
    cases = eval_cases(files)
    entry_path = f"{where}/{manifest.entry}"
    if manifest.type == "agent":
        if BROWSER_TOOL in manifest.declares_tools:
            raise RecipeError(
                [
                    RecipeIssue(
                        MANIFEST_NAME,
                        None,
                        "declares_tools",
                        f"{BROWSER_TOOL!r} is not available to an agent here: only a web recipe package drives a browser",
                    )
                ]
            )
        return Package(folder, manifest, skill=read_skill(entry, path=entry_path), evals=cases)
    spec = parse_recipe(entry, path=entry_path, kind=recipe_kind(entry), name=folder)
    return Package(folder, manifest, recipe=spec, evals=cases)


def recipe_kind(text: str) -> str:
    """A recipe package's kind from its entry's keys: web, code (workdir) or task."""
    head = text.removeprefix("\ufeff").split("\n")
    keys: set[str] = set()
    if head and head[0].rstrip() == "---":
        end = next((i for i in range(1, len(head)) if head[i].rstrip() in ("---", "...")), len(head))
        try:
            loaded = yaml.safe_load("\n".join(head[1:end]))
        except yaml.YAMLError:
            loaded = None  # parse_recipe says what is wrong, at its line
        keys = set(loaded) if isinstance(loaded, dict) else set()
    if keys & set(WEB_KEYS):
        return Kind.WEB.value
    return Kind.CODE.value if "workdir" in keys else Kind.TASK.value


@dataclass(frozen=True)
class AgentRecipe:
    """What a run of an agent package is armed with: a recipe built from its SKILL.md."""

    kind: str
    name: str  # the run's name: `agent-<folder>`, never a recipe's own
    path: str  # names the run (its stem is the name); no such file exists
    text: str


TASK_HEADING = "## The task"


def works_in_copy(package: Package) -> bool:
    """`isolation: worktree` gives the agent its own working copy. Without it rysh runs the agent
    in the shared checkout; here no agent ever touches the checkout, so an agent that declares
    a coding tool works in its own copy all the same (else its tools would silently be missing)."""
    skill = package.skill
    return bool(skill and (skill.worktree or set(package.manifest.declares_tools) & set(CODING_TOOLS)))


def agent_recipe(package: Package, *, prompt: str, budget: str | None = None, until: str | None = None) -> AgentRecipe:
    """The recipe a run of an agent package runs: its instructions first, then the person's
    prompt; the agent's model; a working copy of the repository's root for `isolation:
    worktree`; every task-leg call held for `auto_approve: false` (rysh's `loop.do.auto_approve`); one pass unless an
    `until` is given; the person's budget, else the default pass budget."""
    skill = package.skill
    if skill is None:
        raise ValueError(f"{package.folder} is a {package.manifest.type} package, not an agent")
    if not prompt.strip():
        raise ValueError("an agent runs with a prompt: say what it should do")
    front: dict = {"description": package.manifest.description or skill.description or package.manifest.name}
    if copy := works_in_copy(package):
        front["workdir"] = "."
    if skill.model:
        front["model"] = skill.model
    do: dict = {}
    if not skill.auto_approve:  # every call of the task leg waits for a person (docs/approvals.md)
        do["auto_approve"] = False
    if budget:
        do["budget"] = {"size": budget}
    loop: dict = {"do": do} if do else {}
    if until:
        loop["while"] = {"prompts": {"until": until}}
    if loop:
        front["loop"] = loop
    yaml_text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=100)
    body = f"{skill.instructions}\n\n{TASK_HEADING}\n\n{prompt.strip()}\n"
    kind = Kind.CODE.value if copy else Kind.TASK.value
    name = f"agent-{package.folder}"
    path = posixpath.join(package.path, f"{name}.md")
    return AgentRecipe(kind=kind, name=name, path=path, text=f"---\n{yaml_text}---\n\n{body}")
