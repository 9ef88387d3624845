"""The API's shape, exactly as the DRF service answered: what is served where, and the bytes.

`urls` is the one mapping resource/page ↔ URL ↔ file path, and the layout of a site
directory; `render` encodes records as DRF's JSONRenderer; `pages` cuts DRF's
LimitOffsetPagination pages with their links; `meta` holds the OPTIONS and error
bodies; `serving` what every host and the write service agree on (methods, sizes,
addresses, what a build records of how it is served); `schemas` checks documents
against the JSON Schemas in schemas/. It knows the catalogue's records, not how a
build runs or how a host serves.
"""
