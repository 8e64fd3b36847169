"""The rows of a client/server run folder: one per host and direction, and the pooled one.

A run over many hosts (``iolab.measure.clients.measure_hosts``) keeps fio's raw client output
(``fio.json``, ``fio.stderr``), the host list fio was given (``hosts.list``), what iolab
knew of each host (``hosts.json``: name, address, port, fio version, status, fio's words
when it failed) and each host's system snapshot (``hosts/<host>/system.json``).

``run_rows(run_dir)`` reads them back as::

    host         direction  host_status  iops     clat_p99_us  kernel ...
    10.1.0.2     read       ok           41022.   88.1         6.1.0-18
    10.1.1.2     read       ok           39870.   91.4         6.1.0-18
    10.1.2.2     none       failed       NaN      NaN          ...        (host_error: fio's words)
    pooled       read       ok           80892.   90.2                    (pooled_as: 2 hosts ...)

``host`` is the host as the user named it (fio's report has the address and port; two
servers on one address are told apart by port). fio's own "All clients" entry is left
out; the pooled row sums IOPS and bandwidth over the hosts (they ran at the same time) and
takes percentiles from their summed json+ bins (``iolab.read.pool``), never an average of
percentiles. A host's snapshot columns (kernel, governor, scheduler) sit on its rows.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import runfiles
from ..core.errors import IolabError
from ..core.paths import safe_name
from ..core.runfiles import FIO_JSON, HOSTS_DIR, HOSTS_JSON, HOSTS_LIST, SYSTEM_JSON
from ..core.system import snapshot_columns
from .fiojson import load_document
from .fiojson import run_rows as fio_rows
from .pool import ALL_CLIENTS, pool_outputs

HOSTS_FILE, HOST_LIST = HOSTS_JSON, HOSTS_LIST
FILES = (HOSTS_FILE, HOST_LIST, HOSTS_DIR)  # beside fio's own files (iolab.read.fiojson.FILES)
POOLED = "pooled"


def host_snapshot(run_dir: str | Path, folder: str) -> dict[str, Any]:
    """A host's system snapshot in a run folder ({} when none was taken). ``folder`` comes
    from the folder's hosts.json: read as ``safe_name`` makes it, never outside ``hosts/``."""
    path = Path(run_dir) / HOSTS_DIR / safe_name(folder, fill="_", fallback="host", per_char=True) / SYSTEM_JSON
    return runfiles.read_json(path, optional=True) or {}


def run_rows(run_dir: str | Path) -> pd.DataFrame:
    """The rows of a client/server run folder (module docstring)."""
    run_dir = Path(run_dir)
    hosts = runfiles.read_json(run_dir / HOSTS_FILE, keys=("hosts",))["hosts"]
    by_address = {(h["address"], int(h["port"])): h for h in hosts}
    stats = load_document(run_dir / FIO_JSON).data.get("client_stats", [])
    frame = fio_rows(run_dir)
    frame = frame[frame["job"] != ALL_CLIENTS].copy()
    entries = [stats[i] for i in frame["job_index"]]
    named = [by_address.get((str(e.get("hostname", "")), int(e.get("port", 0)))) for e in entries]
    frame["host"] = [h["name"] if h else f"{e.get('hostname')}:{e.get('port')}" for h, e in zip(named, entries)]
    frame["host_status"] = "ok"
    frame["host_error"] = ""
    for col in ("kernel", "governor", "scheduler_active", "smt"):
        frame[col] = [snapshot_columns(host_snapshot(run_dir, h["folder"]))[col] if h else math.nan for h in named]
    failed = [
        {
            "host": h["name"],
            "direction": "none",
            "host_status": "failed",
            "host_error": h.get("error", ""),
            "job": "",
            "fio_warnings": frame["fio_warnings"].iloc[0] if len(frame) else "",
        }
        for h in hosts
        if h.get("status") == "failed"
    ]
    parts = [frame, pd.DataFrame(failed)] if failed else [frame]
    ok = frame[frame["direction"] != "none"]
    if ok["host"].nunique() > 1:
        parts.append(_pooled(run_dir, ok, frame))
    out = pd.concat(parts, ignore_index=True)
    order = {h["name"]: i for i, h in enumerate(hosts)}
    out = out.iloc[sorted(range(len(out)), key=lambda i: order.get(out["host"].iloc[i], len(order)))]
    out = out.reset_index(drop=True)
    return out[["host", *[c for c in out.columns if c != "host"]]]


def _pooled(run_dir: Path, ok: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """The pooled rows of the hosts that reported (``iolab.read.pool``, concurrent, summed)."""
    try:
        pooled = pool_outputs([run_dir / FIO_JSON], files="concurrent")
    except IolabError as exc:  # a job error on some host: its bins cannot be trusted in a sum
        return pd.DataFrame(
            [{"host": POOLED, "direction": "none", "host_status": "failed", "host_error": f"not pooled: {exc}"}]
        )
    n = ok["host"].nunique()
    pooled["pooled_as"] = f"{n} hosts (concurrent: IOPS summed, percentiles from summed json+ bins)"
    pooled["host"], pooled["job"], pooled["host_status"], pooled["host_error"] = POOLED, "all hosts", "ok", ""
    for col in ("fio_version", "fio_warnings", "kernel", "governor", "scheduler_active", "smt"):
        values = frame[col].dropna().unique() if col in frame else []
        pooled[col] = values[0] if len(values) == 1 else ("/".join(map(str, values)) if len(values) else math.nan)
    return pooled
