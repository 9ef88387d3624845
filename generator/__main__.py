"""`python -m generator` is the `catalogue` command."""
from .cli import main

main()
