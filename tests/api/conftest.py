"""The API's tests call it as a script would: Django's test client over the real URL, with
`Authorization: Bearer <token>` and nothing else (no session)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from api.services import token_create


def user_with(role: str | None, name: str | None = None) -> User:
    user = User.objects.create_user(name or f"{role or 'plain'}-user", password="x")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


class Api:
    """One token's calls: `api.get("/api/runs")`, `api.post("/api/runs", {...})`."""

    def __init__(self, secret: str):
        self.secret = secret
        self.client = Client()

    def _headers(self) -> dict:
        return {"Authorization": f"Bearer {self.secret}"}

    def get(self, path: str, **params):
        return self.client.get(path, params, headers=self._headers())

    def post(self, path: str, body: dict | None = None):
        return self.client.post(
            path, json.dumps(body) if body is not None else "", content_type="application/json", headers=self._headers()
        )


@pytest.fixture
def api_as(db):
    """api_as("operator", "operate") -> an Api whose token has those scopes, owned by a user
    of that role (made once per role)."""

    def make(role: str | None, *scopes: str, name: str = "ci", days: int = 30) -> Api:
        username = f"{role or 'plain'}-user"
        owner = User.objects.filter(username=username).first() or user_with(role)
        made = token_create(owner=owner, name=name, scopes=list(scopes), days=days, by=owner)
        api = Api(made.secret)
        api.token = made.token
        api.owner = owner
        return api

    return make
