"""The API's browsable docs (/api/docs): django-ninja's Swagger UI page from its own template and
static files, never its CDN variant.

ninja chooses its local template only when the literal "ninja" is in INSTALLED_APPS; this project
installs ninja's files under another app path (rysh_site/ninja_app) so a worker never imports
ninja, and renders the same template here.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja import NinjaAPI
from ninja.openapi.docs import Swagger


class LocalSwagger(Swagger):
    """ninja's Swagger page rendered from templates/ninja/swagger.html (ninja's static files)."""

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        self.settings["url"] = self.get_openapi_url(api, kwargs)
        context = {
            "swagger_settings": json.dumps(self.settings, indent=1),
            "api": api,
            "add_csrf": any(getattr(a, "csrf", False) for a in (api.auth or ())),
        }
        return render(request, self.template, context)
