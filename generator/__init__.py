"""The static JSON API generator of the Persian book catalogue: a data directory in, a
published site that answers as the catalogue's DRF service did out.

The package map, in the order the parts import one another (each only from parts above
it; tests/test_architecture.py keeps the rule):

    errors, system  leaves every part may use: problems reported together; flushing to disk,
                    child processes that end with their parent
    catalogue       the data contract: YAML and CSV read with line numbers, site.yaml, each
                    collection declared once, checked records
    api             the API's shape: URL <-> file, the route table, DRF's bytes, the query
                    parameters with their indexes, the OpenAPI document, the HTML view
    sitebuild       the build: records into a generation of files, incremental, published
                    by one atomic swap
    hosts           serving a built site: nginx, the built-in server, the JavaScript hosts
                    (Cloudflare, CloudFront, Netlify), deploying to a bucket (and the write
                    service's rebuilds there, handed to it by cli)
    writes          POSTs checked as DRF checks them, appended to the data, published by
                    rebuilds
    importer        a live catalogue API read back into a data directory
    compose         a build, then what each host needs (the one place sitebuild meets hosts)
    cli             the `catalogue` command, a thin layer on top of all of it

So: errors, system <- catalogue <- api <- sitebuild, hosts, writes, importer <- compose <- cli.
sitebuild, hosts, writes and importer import catalogue and api only, never each other;
compose imports sitebuild and hosts; cli any of them.
Each subpackage's own docstring maps its modules; docs/architecture.md tells the design.
Nothing is imported here, so that a process running one module (the background deleter
of sitebuild) starts without the rest.
"""
