"""Import: freeze a live catalogue API (the DRF service this project replaces, or a site it
built) into a data directory that builds the same API back.

    crawl    reads the API root and every page of every collection, politely, resumably
    convert  turns the documents back into docs/spec/data.md's records; infers the site's settings
    output   writes the data directory, reads it back, and puts it in place at once
    probe    the service's search, ordering and filters as told, checked with a few queries
"""
from .freeze import Options, Summary, freeze
from .probe import read_query_file

__all__ = ["Options", "Summary", "freeze", "read_query_file"]
