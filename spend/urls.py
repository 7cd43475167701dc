from django.urls import path

from spend import views

urlpatterns = [
    path("spend/", views.spend, name="spend"),
    path("spend.csv", views.spend_csv, name="spend_csv"),
    path("quotas/", views.quota_list, name="quota_list"),
    path("quotas/<int:pk>/remove/", views.quota_remove, name="quota_remove"),
    path("prices/", views.price_list, name="price_list"),
    path("prices/<int:pk>/remove/", views.price_remove, name="price_remove"),
]
