"""The JupyterLab front door: the argv ``make lab`` runs, and the one-line refusals of a bad
port or address (the server itself is started in tests/test_browser.py)."""

import os
import socket
import subprocess
import sys

import pytest

from iolab.cli.lab import check_free, check_port, lab_argv
from iolab.core.errors import InputError
from iolab.report.kernel import KERNEL_DISPLAY, kernel_warning
from support.paths import REPO


def _opts(argv: list[str]) -> set[str]:
    return set(argv[4:])


def test_argv_is_this_venvs_jupyter_lab_on_localhost(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    argv = lab_argv("nb")
    assert argv[:4] == [sys.executable, "-m", "jupyter", "lab"]
    assert {
        "--ServerApp.root_dir=nb",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=8888",
        "--ServerApp.port_retries=0",
        "--no-browser",
    } <= _opts(argv)
    assert not any("token" in a for a in argv)  # JupyterLab makes one and prints the URL with it
    assert ("--allow-root" in argv) == (os.geteuid() == 0)


def test_browser_opens_only_with_a_display_or_when_asked(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    assert "--no-browser" not in lab_argv("nb")
    assert "--no-browser" in lab_argv("nb", open_browser=False)
    argv = lab_argv("nb", port=9000, ip="0.0.0.0", token="abc")
    assert {"--ServerApp.port=9000", "--ServerApp.ip=0.0.0.0", "--IdentityProvider.token=abc"} <= _opts(argv)
    with pytest.raises(InputError, match="empty token"):
        lab_argv("nb", token="")


@pytest.mark.parametrize("port", ["abc", "", "0", "70000", "-1"])
def test_a_bad_port_says_how_to_give_one(port):
    with pytest.raises(InputError, match="PORT=8889"):
        check_port(port)


def test_a_busy_port_is_refused_not_moved():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(InputError, match=f"in use.*PORT={port + 1}"):
            check_free("127.0.0.1", port)
    with pytest.raises(InputError, match="IP=0.0.0.0"):
        check_free("no-such-host.invalid", 8888)


def test_make_lab_with_a_bad_port_prints_one_line():
    out = subprocess.run(["make", "-s", "lab", "PORT=abc"], cwd=REPO, capture_output=True, text=True)
    lines = [line for line in out.stderr.splitlines() if line.startswith("iolab lab:")]
    assert out.returncode != 0 and len(lines) == 1 and "PORT=8889" in lines[0], out.stderr


def test_the_notebooks_kernel_is_the_projects():
    assert kernel_warning() == "", f"JupyterLab would not offer {KERNEL_DISPLAY!r}"


def test_make_lab_turns_off_jupyterlabs_news_pop_up_and_keeps_other_overrides(tmp_path):
    import json

    from iolab.cli.lab import quiet_lab

    settings = tmp_path / "share/jupyter/lab/settings"
    settings.mkdir(parents=True)
    (settings / "overrides.json").write_text(
        json.dumps(
            {
                "@jupyterlab/apputils-extension:themes": {"theme": "x"},
                "@jupyterlab/apputils-extension:notification": {"doNotDisturbMode": True},
            }
        )
    )
    path = quiet_lab(tmp_path)
    doc = json.loads(path.read_text())
    assert doc["@jupyterlab/apputils-extension:notification"] == {
        "doNotDisturbMode": True,
        "fetchNews": "false",
        "checkForUpdates": False,
    }
    assert doc["@jupyterlab/apputils-extension:themes"] == {"theme": "x"}
    assert doc["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"] == {"markdown": "Markdown Preview"}
    assert quiet_lab(tmp_path) == path and json.loads(path.read_text()) == doc  # twice: the same file
