"""GET /api/packages (docs/packages.md): the catalogue's packages with their tools and evals."""

import pytest

from tests.catalogue.packages_repo import FIXTURE, packages_repo  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

MANIFEST = (FIXTURE / "rysh.pkg.yaml").read_text()


def test_it_lists_the_packages_with_their_tools_and_evals(api_as, packages_repo):
    answer = api_as("viewer", "read").get("/api/packages")
    assert answer.status_code == 200
    [package] = answer.json()["packages"]
    assert package["name"] == "test-fixer" and package["label"] == "@team/test-fixer@0.2.0"
    assert (package["type"], package["version"], package["evals"]) == ("agent", "0.2.0", ["fix-mean"])
    assert [t["name"] for t in package["tools"]] == ["bash", "file_read", "edit", "grep", "glob"]
    assert all(t["available"] for t in package["tools"])
    assert package["runnable"] and not package["newest_broken"] and package["errors"] == []


def test_a_tool_we_lack_is_marked_and_the_newest_versions_errors_shown(api_as, packages_repo):
    packages_repo.commit("a tool we lack", {"rysh.pkg.yaml": MANIFEST + "  - symbol_search\n"})
    [package] = api_as("viewer", "read").get("/api/packages").json()["packages"]
    assert package["tools"][-1] == {"name": "symbol_search", "available": False, "meaning": "not available here"}
    assert package["runnable"] and package["newest_broken"]
    assert package["errors"][0].startswith("rysh.pkg.yaml:13 declares_tools: tool 'symbol_search'")


def test_it_needs_a_token(client, packages_repo):
    assert client.get("/api/packages").status_code == 401
