"""The published figures (``data/reference/published_figures.csv``): each figure a seed's
write-up published, typed in with its set-up and cited (``source``), one row per figure:
seed, experiment, label, the settings it was measured at (qd, bs_bytes, cores, freq_ghz) and
its values (iops, clat_p50_us, clat_p99_us, mean_lat_us; µs and IO/s).

    published_figures(experiment="ladder")      # seed 000's ladder steps
    published_figures(seed="000")

The one reader of the file: a seed is named by its digits as text ("000", never 0).
"""

from __future__ import annotations

import pandas as pd

from ..core import paths

FILE = "published_figures.csv"


def published_figures(experiment: str | None = None, seed: str | None = None) -> pd.DataFrame:
    """The published figures, those of ``experiment`` and of ``seed`` ("000") when given, in
    the file's order (the index: each row's place in the file)."""
    table = pd.read_csv(paths.reference_dir() / FILE, dtype={"seed": str, "experiment": str, "label": str})
    if experiment is not None:
        table = table[table["experiment"] == experiment]
    if seed is not None:
        table = table[table["seed"] == str(seed)]
    return table


__all__ = ["published_figures", "FILE"]
