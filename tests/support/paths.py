"""Where things are: the checkout, its recorded fixtures, the team's shared folder beside it
(its published fixtures), and the checkout's Python for the processes tests start."""

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
if not SHARED.exists():  # CI: shared/ beside the clone
    SHARED = Path(os.environ.get("IOLAB_SHARED", REPO.parent / "shared"))
FIXTURES = REPO / "tests" / "fixtures"
PUBLISHED = SHARED / "fixtures"
PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
