"""``python -m iolab ARGS``: the ``iolab`` command, as ``python -m iolab.cli`` runs it."""

import sys

from .cli import main

sys.exit(main())
