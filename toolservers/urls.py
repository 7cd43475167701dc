from django.urls import path

from toolservers import views

urlpatterns = [
    path("mcp-servers/", views.server_list, name="toolserver_list"),
    path("mcp-servers/<int:pk>/", views.server_detail, name="toolserver_detail"),
    path("mcp-servers/<int:pk>/test/", views.server_test_view, name="toolserver_test"),
    path("mcp-servers/<int:pk>/delete/", views.server_delete, name="toolserver_delete"),
]
