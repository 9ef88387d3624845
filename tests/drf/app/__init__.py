"""The catalogue as a Django REST Framework application (api.md): models, serializers,
viewsets; the URLs are in drf.urls."""
