"""Every answer of the API has its schema in /api/openapi.json (docs/api.md): a script's author
reads what comes back there, not only what goes in."""

from __future__ import annotations

import pytest

from tests.api.conftest import user_with


@pytest.mark.django_db
def test_it_describes_every_success_answer_with_a_schema(client):
    client.force_login(user_with("viewer"))
    schema = client.get("/api/openapi.json").json()
    bare = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation.get("responses", {}).items():
                if not status.startswith("2"):
                    continue
                body = answer.get("content", {}).get("application/json", {}).get("schema")
                if not body or not ("$ref" in body or body.get("properties") or "anyOf" in body):
                    bare.append(f"{method.upper()} {path} {status}")
    assert bare == []


@pytest.mark.django_db
def test_a_run_answer_names_its_pass_as_pass(client):
    client.force_login(user_with("viewer"))
    components = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert "pass" in components["RunSummaryOut"]["properties"]
    assert "pass" in components["ApprovalOut"]["properties"]
