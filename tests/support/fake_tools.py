"""Stand-ins for outside tools, first on PATH, that fail as the real ones do."""

import os
import stat


def failing_nvme(tmp_path, monkeypatch) -> None:
    """An ``nvme`` first on PATH that fails as nvme-cli does (status on stderr, exit 2)."""
    fake = tmp_path / "bin" / "nvme"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'NVMe status: Invalid Field in Command(0x2)' >&2\nexit 2\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
