"""What a host needs to serve a built site: its configuration, written from the one
route table in api/routes.py into `<site>/hosts/<name>/`, and a way to run it here.

Each host is a module with a `HOST` (contract.py), listed once in registry.py, which
`catalogue build` (compose.py), `catalogue serve --server` and the tests' servers loop
over: `nginx` (a server block and a standalone nginx.conf, from templates/), `builtin`
(the same routes in Python), `router` (the route table as JavaScript, router.py), and
the hosts that run that router in front of files: `cloudflare`, `cloudfront`,
`netlify`. files.py, query.py and querystring.py are what their generated files share;
deploy.py copies a published site to a bucket, and publish.py does so after each of the
write service's rebuilds (with a CloudFront invalidation). Hosts read a built site; they
never build one.
"""
