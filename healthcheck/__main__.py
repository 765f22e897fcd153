"""`python -m sitscheck`."""

from .cli import main

main()
