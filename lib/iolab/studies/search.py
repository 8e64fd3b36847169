"""A parameter search as a notebook reads it (seed 003): a runs folder that holds a search is
read back and nothing runs; otherwise the spec runs (``iolab.measure.search.run``: into its
own folder, resuming what a crash or Ctrl-C left).

    found = search_study("data/examples/search_small.yaml")
    found.table, found.axes        # the tidy table; the axes this machine really varied
    print(found.words())           # search 'bs-qd': 24 runs (24 ok); axes: bs, iodepth
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.paths import REPO
from ..machine import preflight
from ..measure import search
from ..measure.options import MeasureOptions
from ..measure.search_spec import Spec, load_spec


@dataclass(frozen=True)
class SearchStudy:
    """A search's spec, its table, the spec's axes the table holds and this machine varied
    (``axes``, in the spec's order, with their levels), the others (``missing``), its runs
    folder, and whether anything ran (``ran``: False when a finished search was read back)."""

    spec: Spec
    table: pd.DataFrame
    axes: dict[str, list[Any]]
    missing: list[str]
    runs_dir: Path
    ran: bool

    def words(self) -> str:
        """One line: the search, its runs by status, the axes read and those not varied here."""
        t = self.table
        status = t.drop_duplicates("run_id")["status"].value_counts().to_dict() if "status" in t else {}
        runs = t["run_id"].nunique() if "run_id" in t else 0
        said = ", ".join(f"{n} {k}" for k, n in status.items())
        line = f"search {self.spec.name!r}: {runs} runs" + (f" ({said})" if said else "")
        line += f"; axes: {', '.join(self.axes) or 'none'}"
        return line + (f"; not varied here: {', '.join(self.missing)}" if self.missing else "")


def search_study(
    spec: str | os.PathLike,
    runs_dir: str | os.PathLike | None = None,
    *,
    resume: bool = False,
    drop_unavailable: bool = False,
    how: MeasureOptions | Mapping[str, Any] | None = None,
) -> SearchStudy:
    """Read back ``runs_dir`` when it holds a search (its ``search.yaml``) and ``resume`` is
    False: nothing runs. Otherwise run ``spec`` (a path; a relative one not found here is read
    from the repository) into ``runs_dir`` (None: ``search-<name>`` under data/runs), its
    finished runs kept (``iolab.measure.search.run``; ``drop_unavailable`` and ``how`` as
    there)."""
    saved = Path(runs_dir) / "search.yaml" if runs_dir else None
    if saved is not None and saved.exists() and not resume:
        spec_obj, folder, ran = load_spec(saved), Path(runs_dir), False
        table = search.load_table(folder)
    else:
        spec_obj = spec_of(spec)
        folder, ran = Path(runs_dir or search.default_folder(spec_obj)), True
        table = search.run(spec_obj, runs_dir=folder, drop_unavailable=drop_unavailable, how=how)
    really_varied = search.varied(spec_obj.axes, search.left_out(folder))
    axes = {a: levels for a, levels in spec_obj.axes.items() if a in table and a in really_varied}
    missing = [a for a in spec_obj.axes if a not in axes]
    return SearchStudy(spec_obj, table, axes, missing, folder, ran)


def spec_of(spec: str | os.PathLike) -> Spec:
    """The spec at ``spec``; a relative path not found here is read from the repository."""
    path = Path(spec)
    return load_spec(path if path.is_absolute() or path.exists() else REPO / path)


def preflight_of(
    spec: str | os.PathLike, runs_dir: str | os.PathLike | None = None, *, resume: bool = False, interval_s: float = 0.3
) -> preflight.Verdicts | str:
    """The preflight of the search ``search_study`` will run: its spec's CPUs and the block
    devices it names (a scratch file's or a loop device's disk is made when it runs). A runs
    folder read back runs nothing: then a line that says so."""
    if runs_dir and (Path(runs_dir) / "search.yaml").exists() and not resume:
        return f"{runs_dir} holds a search: it is read back and nothing runs, so there is no preflight to take"
    found = spec_of(spec)
    devices = [str(t) for t in found.target if str(t).startswith("/dev/")]
    return preflight.Verdicts(preflight.of_study(devices, found.cpus, interval_s))
