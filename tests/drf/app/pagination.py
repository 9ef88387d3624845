"""DRF's LimitOffsetPagination with the site's max_limit (site.yaml; none: DRF's default)."""
import os

from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    max_limit = int(os.environ["CATALOGUE_DRF_MAX_LIMIT"]) if os.environ.get("CATALOGUE_DRF_MAX_LIMIT") else None
