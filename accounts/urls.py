from django.urls import path

from accounts.views import OIDCCallback, OIDCStart

# names as mozilla-django-oidc's own, which it reverses (the callback's redirect_uri)
urlpatterns = [
    path("authenticate/", OIDCStart.as_view(), name="oidc_authentication_init"),
    path("callback/", OIDCCallback.as_view(), name="oidc_authentication_callback"),
]
