"""The catalogue as a Django REST Framework application (docs/spec/api.md): models, serializers,
viewsets; the URLs are in drf.urls."""
