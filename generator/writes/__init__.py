"""The write path: clients POST users and bookshelves, as they did to the DRF service.

`service` is the HTTP endpoint (Starlette on uvicorn) behind the host; `create`
checks a body with DRF's messages and then the build's own rules; `append` adds the
record to its data file durably, in the file's own format; `tokens` keeps the hashes
of the tokens that may write; `rebuild` publishes writes by running builds. Writes
feed back into data/: the data directory stays the source of truth.
"""
