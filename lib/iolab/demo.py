"""``make demo`` / ``iolab demo``: run the flagship notebooks headless with short settings
against the default scratch-file target, and write each one's offline write-up
(``iolab.publish.publish``: HTML without code cells, parameters, provenance)."""
from __future__ import annotations

from pathlib import Path

from . import paths
from .locks import folder_locked
from .publish import execute, publish

FLAGSHIP = {
    # 3 repeats (the knee's interval resamples them) x 8 depths x 1 s; up to QD 128, where a
    # scratch file on a VM disk flattens (to 64 it may not: "no knee, sweep deeper"). The whole
    # demo: about 90 s on a 2-vCPU VM; keep it under 2 minutes.
    "01_queue_depth_knee.ipynb": lambda rt: {"runtime_s": rt, "queue_depths": [1, 2, 4, 8, 16, 32, 64, 128],
                                             "repeats": 3, "size": "256m"},
    "04_flame_graph.ipynb": lambda rt: {"runtime_s": max(rt, 2.0), "size": "256m"},
    # one run over time: 20 intervals of 500 ms, enough for SNIA's 5-interval window to be judged
    "08_over_time.ipynb": lambda rt: {"runtime_s": 10 * rt, "log_ms": 500, "size": "256m"},
}


def run_demo(out_dir: Path | None = None, runtime_s: float = 1.0) -> list[Path]:
    out_dir = Path(out_dir or paths.PAPERMILL_RUNS)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with folder_locked(out_dir):  # a second demo waits: reports are never interleaved
        for name, params in FLAGSHIP.items():
            executed = execute(paths.NOTEBOOKS / name, out_dir / name, params(runtime_s))
            written += [executed, publish(executed)]
    return written
