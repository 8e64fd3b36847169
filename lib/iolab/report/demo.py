"""``make demo`` / ``iolab demo``: run the flagship notebooks headless with short settings
against the default scratch-file target, and write each one's offline write-up
(``iolab.report.publish.publish``: HTML without code cells, parameters, provenance)."""

from __future__ import annotations

from pathlib import Path

from ..core import paths
from ..core.outputs import claim_folder, claim_output
from ..machine.locks import folder_locked
from .publish import execute, publish

FLAGSHIP = {
    # 3 repeats (the knee's interval resamples them) x 8 depths; up to QD 128, where a scratch
    # file on a VM disk flattens (to 64 it may not: "no knee, sweep deeper"). The whole demo at
    # the default 0.4 s per run (fio itself adds about 0.3 s to each): about 50 s on a 2-vCPU VM
    # after set-up; keep it under a minute.
    "01_queue_depth_knee.ipynb": lambda rt: {
        "runtime_s": rt,
        "queue_depths": [1, 2, 4, 8, 16, 32, 64, 128],
        "repeats": 3,
        "size": "256m",
    },
    "04_flame_graph.ipynb": lambda rt: {
        "runtime_s": round(max(3 * rt, 1.2), 3),
        "size": "256m",
    },  # ~1,200 samples a side at 999 Hz
    # one run over time: 20 intervals, enough for SNIA's 5-interval window to be judged
    "08_over_time.ipynb": lambda rt: {
        "runtime_s": round(10 * rt, 3),
        "log_ms": max(100, round(500 * rt)),
        "size": "256m",
    },
}
DEFAULT_RUNTIME_S = 0.4


def run_demo(out_dir: Path | None = None, runtime_s: float = DEFAULT_RUNTIME_S, force: bool = False) -> list[Path]:
    """Each flagship notebook executed into ``out_dir`` (default ``papermill_runs/``, iolab's own
    folder), then written up. A folder or file there that iolab did not write is refused before
    any notebook runs (``iolab.core.outputs``), unless ``force``."""
    out_dir = Path(out_dir or paths.PAPERMILL_RUNS)
    claim_folder(out_dir, force=force)
    for name in FLAGSHIP:
        executed = out_dir / name
        for path in (executed, executed.with_suffix(".html"), executed.with_name(f"{executed.stem}.results.json")):
            claim_output(path, force=force)
    written = []
    with folder_locked(out_dir):  # a second demo waits: reports are never interleaved
        for name, params in FLAGSHIP.items():
            executed = execute(paths.NOTEBOOKS / name, out_dir / name, params(runtime_s), force=force)
            written += [executed, publish(executed, force=force)]
    return written
