"""A Django REST Framework service of the catalogue, written from docs/spec/api.md, for the tests
to compare the static build with: the Django project (settings, urls), its app (app/),
the loader that fills its database from a data directory (load.py) and the runner
(serve.py). tests/drf_service.py starts it from a test."""
