"""The offline web demo's target: a public toy site (no login), see views.py."""

from django.urls import path

from demo_site import views

urlpatterns = [
    path("", views.editor, name="demo_site_editor"),
    path("stories/", views.stories, name="demo_site_stories"),
    path("stories/<int:number>/", views.story, name="demo_site_story"),
    path("stories/<int:number>/publish/", views.publish, name="demo_site_publish"),
    path("p/<int:number>/", views.public, name="demo_site_public"),
]
