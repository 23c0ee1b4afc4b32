"""``python -m ctxfs``: the ``ctxfs`` command line."""

import sys

from ctxfs._cli._main import main

if __name__ == "__main__":
    sys.exit(main())
