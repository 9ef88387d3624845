"""The catalogue as the data directory holds it: the data contract of docs/spec/data.md.

`load` finds each collection's file and reads its rows (YAML or CSV) with their
lines; `settings` checks site.yaml; `fields` holds each collection's fields and the
rules for one value; `records` turns rows into checked records (types, references,
unique ids, the category tree). `synth` writes synthetic catalogues for benchmarks
and tests. Nothing here knows URLs, files of the site or HTTP.
"""
