"""Which regular files iolab created: ``iolab.core.owned`` (the note beside each file), named
here too for the machine layer's write guard (``iolab.machine.jobcheck``) and scratch file
(``iolab.machine.target``)."""

from __future__ import annotations

from ..core.owned import SUFFIX, forget, is_owned, mark, note_of, why_not_owned

__all__ = ["SUFFIX", "forget", "is_owned", "mark", "note_of", "why_not_owned"]
