"""What a host needs to serve a built site: its configuration, written from the one
route table in api/urls.py, and a way to run it.

`nginx` writes the server block and a standalone nginx.conf (from templates/) and
runs nginx in the foreground. Hosts read a built site; they never build one.
"""
