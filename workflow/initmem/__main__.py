"""``python -m initmem``."""

from initmem.cli import main

main()
