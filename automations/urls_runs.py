from django.urls import path

from automations.views import demo_site, profiles, runs

urlpatterns = [
    path("", runs.dashboard, name="dashboard"),
    path("runs/<int:pk>/", runs.run_detail, name="run_detail"),
    path("runs/<int:pk>/stop/", runs.run_stop, name="run_stop"),
    path("runs/<int:pk>/cancel/", runs.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/continue/", runs.run_continue, name="run_continue"),
    path("runs/<int:pk>/resume/", runs.run_resume, name="run_resume"),
    path("runs/<int:pk>/land/", runs.run_land, name="run_land"),
    path("runs/<int:pk>/files/<path:name>", runs.run_file, name="run_file"),
    path("runs/<int:pk>/approvals/<int:approval_pk>/approve/", runs.approval_approve, name="approval_approve"),
    path("runs/<int:pk>/approvals/<int:approval_pk>/reject/", runs.approval_reject, name="approval_reject"),
    path("runs/<int:pk>/steps/<int:step_pk>/screenshot.jpg", runs.step_screenshot, name="step_screenshot"),
    path("runs/<int:pk>/videos/<str:name>", runs.run_video, name="run_video"),
    path("recipes/<str:kind>/<str:name>/run/", runs.run_new, name="run_new"),
    path("recipes/<str:kind>/<str:name>/run/preview/", runs.run_preview, name="run_preview"),
    path("history/", runs.history, name="history"),
    path("history.csv", runs.history_csv, name="history_csv"),
    path("profiles/", profiles.profile_list, name="profile_list"),
    path("profiles/<str:name>/delete/", profiles.profile_delete, name="profile_delete"),
    # the offline web demo's target: a public toy site (no login), see views/demo_site.py
    path("demo-site/", demo_site.editor, name="demo_site_editor"),
    path("demo-site/stories/", demo_site.stories, name="demo_site_stories"),
    path("demo-site/stories/<int:number>/", demo_site.story, name="demo_site_story"),
    path("demo-site/stories/<int:number>/publish/", demo_site.publish, name="demo_site_publish"),
    path("demo-site/p/<int:number>/", demo_site.public, name="demo_site_public"),
]
