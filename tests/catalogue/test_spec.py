"""The one Kind type: the word users type, its folder, and the lookups derived from it."""

from __future__ import annotations

from catalogue.spec import FOLDERS, KINDS, Kind, RecipeSpec


def test_it_spells_each_kind_as_the_word_users_type():
    assert [str(kind) for kind in Kind] == ["web", "task", "code"]
    assert Kind.WEB == "web" and f"{Kind.TASK}/report" == "task/report"


def test_it_knows_each_kinds_folder_both_ways():
    assert {kind: kind.folder for kind in Kind} == {Kind.WEB: "webs", Kind.TASK: "tasks", Kind.CODE: "codes"}
    assert Kind.of_folder("codes") is Kind.CODE
    assert Kind.of_folder("webs") is Kind.WEB and KINDS["tasks"] is Kind.TASK
    assert FOLDERS["web"] == "webs"  # a plain word finds its entry too


def test_it_gives_a_spec_its_folder_and_target_from_the_kind():
    spec = RecipeSpec(path="x.md", kind=Kind.WEB, name="publish", prompt="p")
    assert (spec.folder, spec.target) == ("webs", "web/publish")
