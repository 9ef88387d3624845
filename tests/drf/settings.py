"""Django settings of the DRF service the tests compare the static build with.

The runner (serve.py) sets the environment variables below from the data directory
before Django starts: the database in a work directory, the default page size (the
first of site.yaml's page_sizes) and the time zone created_time is written in.
"""
import os

SECRET_KEY = "tests-only: this service serves public data and signs nothing"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "drf.urls"
WSGI_APPLICATION = None

# No django.contrib.auth: the catalogue's users are profiles (drf.app's UserProfile), and
# writes need no authentication here. DRF's browsable renderer needs its templates.
INSTALLED_APPS = ["django.contrib.staticfiles", "rest_framework", "django_filters", "drf.app"]
# Django's order; the header for other origins comes first, as a CORS middleware is placed,
# so that it is on every answer, the redirect CommonMiddleware answers by itself included.
MIDDLEWARE = [
    "drf.app.middleware.allow_any_origin",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
              "OPTIONS": {"context_processors": ["django.template.context_processors.request"]}}]
STATIC_URL = "/static/"

DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3",
                         "NAME": os.environ.get("CATALOGUE_DRF_DATABASE", ":memory:")}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TIME_ZONE = os.environ.get("CATALOGUE_DRF_TIME_ZONE", "Asia/Tehran")
USE_TZ = True
USE_I18N = True
LANGUAGE_CODE = "en-us"

APPEND_SLASH = True
# Django's defaults, spelled out because docs/spec/http.md names them.
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer",
                                 "rest_framework.renderers.BrowsableAPIRenderer"],
    "DEFAULT_PAGINATION_CLASS": "drf.app.pagination.Pagination",
    "PAGE_SIZE": int(os.environ.get("CATALOGUE_DRF_PAGE_SIZE", "12")),
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "UNAUTHENTICATED_USER": None,
}
