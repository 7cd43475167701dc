"""The policy's pages (docs/policy.md): the admin's organisation policy is validated on save
with the line of every error; the policy page shows the merged rules, their files and lines
and the last sync's errors; `auto check`, the recipe page and the run page say which rule
shaped a run."""

from __future__ import annotations

from html import unescape
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from catalogue.sync import recipes_sync
from policies.models import OrgPolicy
from runs import services
from tests.conftest import SCRIPT
from tests.recipes_git import login, make_user, work  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

BIG = """---
loop:
  do:
    budget:
      size: 3b
---
Work on the list.
"""
NOTE = "policy (.rysh/policy.yaml:3 budget.ceilings.pass): pass budget lowered 3b -> 1b"


@pytest.fixture
def big(work, settings, tmp_path):
    settings.RYSH_RESULTS_DIR = tmp_path / "results"
    work.commit("Big", tasks__big=BIG)
    (work.path / ".rysh/automations/tasks/big.script.yaml").write_text(SCRIPT)
    (work.path / ".rysh/policy.yaml").write_text("budget:\n  ceilings:\n    pass: 1b\nbash:\n  deny: ['rm -rf:*']\n")
    work.commit("policy")
    recipes_sync()
    return work


@pytest.fixture
def admin(client):
    return login(client, make_user("root", role="admin", is_staff=True, is_superuser=True))


def test_the_org_policy_row_is_validated_on_save_with_its_lines():
    with pytest.raises(ValidationError) as caught:
        OrgPolicy(text="bash:\n  deny: [rm]\nbudget:\n  ceiling:\n    run: 1b\n").save()
    assert caught.value.message_dict["text"] == [
        "org policy (admin):4 budget.ceiling: unknown key 'ceiling' (did you mean 'ceilings'?)"
    ]
    assert not OrgPolicy.objects.exists()
    OrgPolicy(text="bash:\n  deny: [rm]\n").save()
    assert OrgPolicy.objects.count() == 1


def test_the_admin_page_refuses_a_bad_org_policy_beside_the_field(admin):
    answer = admin.post("/admin/policies/orgpolicy/add/", {"text": "budget:\n  ceilings:\n    pass: many\n"})
    page = answer.content.decode()
    assert answer.status_code == 200 and "org policy (admin):3 budget.ceilings.pass: expected" in page
    assert not OrgPolicy.objects.exists()
    answer = admin.post("/admin/policies/orgpolicy/add/", {"text": "budget:\n  ceilings:\n    pass: 2b\n"})
    assert answer.status_code == 302 and OrgPolicy.objects.get().updated_by.username == "root"


def test_the_admins_org_policy_merges_with_the_repositorys(big):
    OrgPolicy(text="bash:\n  deny: ['git push:*']\nbudget:\n  ceilings:\n    pass: 2b\n").save()
    run = services.run_start(kind="task", name_or_path="big", args=[], provider="scripted")
    assert run.policy["sources"] == ["org policy (admin)", ".rysh/policy.yaml"]
    assert [rule[0] for rule in run.policy["deny"]] == ["bash(git push:*)", "bash(rm -rf:*)"]
    assert run.policy["notes"] == [NOTE]  # the repository's 1b is lower than the org's 2b


def test_the_policy_page_shows_the_merged_rules_their_lines_and_the_last_errors(big, client):
    viewer = login(client, make_user("vera", role="viewer"))
    page = viewer.get("/recipes/policy/").content.decode()
    assert "deny bash(rm -rf:*)  (.rysh/policy.yaml:5 bash.deny)" in page
    assert "pass ceiling 1b  (.rysh/policy.yaml:3 budget.ceilings.pass)" in page
    assert "policy-broken" not in page
    (big.path / ".rysh/policy.yaml").write_text("bash:\n  deny: rm\n")
    big.commit("break it")
    recipes_sync()
    page = viewer.get("/recipes/policy/").content.decode()
    assert "No run starts" in page and ".rysh/policy.yaml:2 bash.deny: expected a list of patterns" in page
    assert 'href="/recipes/policy/"' in viewer.get("/recipes/").content.decode()


def test_check_the_recipe_page_and_the_run_page_say_which_rule_shaped_the_run(big, client):
    out = StringIO()
    call_command("auto", "task", "check", "big", stdout=out)
    assert "perPass: tokens=200000" in out.getvalue(), out.getvalue()
    assert NOTE in out.getvalue(), out.getvalue()
    operator = login(client, make_user("otto", role="operator"))
    assert NOTE in unescape(operator.get("/recipes/task/big/").content.decode())
    run = services.run_start(kind="task", name_or_path="big", args=[], provider="scripted")
    page = unescape(operator.get(f"/runs/{run.pk}/").content.decode())
    assert NOTE in page and "bash(rm -rf:*)" in page
