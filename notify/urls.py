from django.urls import path

from notify import views

urlpatterns = [
    path("notifications/", views.channel_list, name="channel_list"),
    path("notifications/deliveries/", views.delivery_list, name="delivery_list"),
    path("notifications/<int:pk>/", views.channel_edit, name="channel_edit"),
    path("notifications/<int:pk>/delete/", views.channel_delete, name="channel_delete"),
    path("notifications/<int:pk>/test/", views.channel_test, name="channel_test"),
]
