"""``python -m initmem``."""

import sys

from initmem.checkout import check_checkout

check_checkout(sys.argv[1:])  # before anything else: another checkout's code must not run in this one

from initmem.cli import main  # noqa: E402

main()
