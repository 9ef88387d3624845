"""What a host needs to serve a built site: its configuration, written from the one
route table in api/routes.py into `<site>/hosts/<name>/`, and a way to run it here.

Each host is a module with a `HOST` (contract.py: what it writes, how it serves here,
the `catalogue build` options it reads with their checks), listed once in registry.py,
which `catalogue build` (compose.py), `catalogue serve --server` and the tests' servers
loop over: `nginx` (a server block and a standalone nginx.conf, from templates/, and its
options: listen, write service, page service), `builtin` (the same routes in Python),
and the hosts that run the JavaScript router (router.py, the route table as JavaScript:
a part they share, written into `<site>/hosts/router/`) in front of files:
`cloudflare`, `cloudfront`, `netlify`. files.py, query.py (the query backends'
JavaScript twins) and querystring.py are what their generated files share; deploy.py
copies a published site to a bucket, and publish.py does so after each of the write
service's rebuilds (with a CloudFront invalidation). Hosts read a built site; they never
build one.
"""
