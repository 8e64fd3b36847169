"""``python -m iolab.cli ARGS``: the ``iolab`` command (the Makefile and the tests run it so)."""

import sys

from . import main

sys.exit(main())
