"""``python -m iolab ARGS``: the ``iolab`` command, as the ``iolab`` program runs it."""

import sys

from . import _command

sys.exit(_command())
