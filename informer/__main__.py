"""``python -m informer COMMAND``: see :mod:`informer.cli`."""

from __future__ import annotations

import sys

from informer.cli import main

if __name__ == "__main__":
    sys.exit(main())
