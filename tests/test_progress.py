"""Progress in a notebook's kernel and on a terminal: a bar that ends leaves one short line or
nothing, never a bar (issue 42: finished bars stayed, and a reopened notebook missed their widgets)."""

import pytest

from iolab.core import progress
from iolab.core.readable import readable_seconds


class Handle:
    """What IPython's ``display(..., display_id=True)`` returns, recording what it showed."""

    def __init__(self, shown: list):
        self.shown = shown

    def update(self, bundle, raw=False):
        self.shown.append(bundle["text/plain"])


@pytest.fixture
def kernel(monkeypatch):
    """A kernel's display, faked: every bar's outputs, in order, per display."""
    import IPython.display

    outputs: list[list[str]] = []

    def display(bundle, raw=False, display_id=False):
        assert raw and display_id and "widget" not in " ".join(bundle)  # text, updated in place
        outputs.append([bundle["text/plain"]])
        return Handle(outputs[-1])

    monkeypatch.setattr(IPython.display, "display", display)
    monkeypatch.setattr(progress, "in_kernel", lambda: True)
    monkeypatch.setattr(progress, "headless", lambda: False)
    return outputs


def test_a_finished_bar_becomes_one_line_and_a_stopped_one_goes(kernel, monkeypatch):
    monkeypatch.setattr(progress.Shown, "REDRAW_S", 0)
    assert list(progress.bar(range(3), "runs")) == [0, 1, 2]
    assert kernel[0][0].startswith("runs:   0%|") and "3/3" in kernel[0][-2]
    assert kernel[0][-1] == "runs: done, 3 runs in 0 s"
    with pytest.raises(RuntimeError):
        for _ in progress.bar(range(4), "failing"):
            raise RuntimeError("fio failed")
    assert kernel[1][-1] == ""  # gone: the error says what happened
    knee = progress.bar(None, "knee search", total=12)
    knee.update(7)
    knee.close()
    assert kernel[2][-1] == "knee search: 7 of 12 runs in 0 s"
    with progress.bar(None, "writing once", unit="MiB", total=64, delay=5) as quick:
        quick.update(64)
    with progress.Stages("profile", ["fio", "perf script"]) as stages:
        stages.advance()
    assert len(kernel) == 4 and kernel[3][-1] == "profile: done, 2 stages in 0 s"  # the quick one never showed
    ticking = progress.Ticking("fio x", 60)
    ticking.close()
    assert kernel[4][0].startswith("fio x:   0%|") and kernel[4][-1] == ""
    said = [readable_seconds(s) for s in (41, 210, 2 * 3600, 1.5 * 86400, 3 * 86400)]  # one wording of a wall time
    assert said == ["41 s", "4 min", "2 h", "36 h", "3 days"]


def test_headless_shows_nothing_and_a_terminal_rewrites_one_line(kernel, monkeypatch, capsys):
    monkeypatch.setattr(progress, "headless", lambda: True)
    assert sum(progress.bar(range(5), "runs")) == 10 and kernel == []
    monkeypatch.setattr(progress, "headless", lambda: False)
    monkeypatch.setattr(progress, "in_kernel", lambda: False)
    monkeypatch.setattr(progress, "_watched", lambda: True)  # stderr a terminal
    list(progress.bar(range(2), "runs"))
    err = capsys.readouterr().err
    assert err.startswith("\r\x1b[Kruns:   0%|") and err.endswith("\r\x1b[Kruns: done, 2 runs in 0 s\n")
