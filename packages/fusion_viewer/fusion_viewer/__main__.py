"""``python -m fusion_viewer render|diff|study``: see :mod:`fusion_viewer.cli`."""

import sys

from .cli import main


if __name__ == "__main__":
    sys.exit(main())
