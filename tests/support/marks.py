"""Skip marks for what a machine may lack: root (loop devices, mounts), the shared fixtures."""

import os

import pytest

from support.paths import PUBLISHED

is_root = os.geteuid() == 0
needs_root = pytest.mark.skipif(not is_root, reason="needs root (loop devices, mounts)")
needs_shared = pytest.mark.skipif(not PUBLISHED.exists(), reason="shared/fixtures not beside the checkout")
