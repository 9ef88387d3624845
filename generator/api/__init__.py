"""The API's shape, exactly as the DRF service answered: what is served where, and the bytes.

`urls` is the one mapping resource/page ↔ URL ↔ file path, and the layout of a site
directory; `render` encodes records as DRF's JSONRenderer; `pages` cuts DRF's
LimitOffsetPagination pages with their links; `meta` holds the OPTIONS and error
bodies; `serving` what every host and the write service agree on (methods, sizes,
addresses, what a build records of how it is served); `schemas` checks documents
against the JSON Schemas in schemas/. Then request time: `querystring` reads a query
string as Django does; `backends/` holds the query backends (relation filters, search,
ordering, paging: each a module with its JavaScript twin and its index format, in one
registry, backends/__init__.py); `pageindex` and `assemble` put any page together from
the pre-built ones. It knows the catalogue's records, not how a build runs or how a host
serves.
"""
