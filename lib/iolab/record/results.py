"""Recorded results: a notebook's key figures and the run folders behind them, kept with
the executed notebook so it can be read, compared and reproduced (``iolab reproduce``).

    results.record("peak IOPS", 231000, "IO/s", source="fio json+", low=225000, high=236000,
                   note="at QD 32; 95 % t interval over 3 repeats")
    results.record_runs(table)        # the run folders of a table's run_id column
    results.collect("papermill_runs/01_queue_depth_knee.ipynb")
    # -> {"results": [{"name": "peak IOPS", "value": 231000, ...}], "run_folders": ["/…/data/runs/…"]}

Each call displays one output with the MIME type ``application/vnd.iolab.core.results+json``
(``{"results": [...]}`` or ``{"run_folders": [...]}``) and a ``text/plain`` line for
people; ``collect`` reads them back from the executed notebook's outputs. With
``IOLAB_RESULTS_FILE`` set, each call also adds to that JSON file (same shape as
``collect``), rewritten whole. ``iolab.report.publish.execute`` puts the collected results in the
executed notebook's ``metadata["iolab"]`` and in ``<output stem>.results.json`` beside it.

A value is a number, a string, a bool or None; numpy scalars become int/float, NaN and
±inf become None (JSON has neither). A later record of the same name replaces the earlier.

In a live kernel (JupyterLab; not a headless run, which sets ``IOLAB_HEADLESS=1`` and whose
results ``publish.execute`` keeps itself) what a cell records is handed, when the cell ends
without an error, to the sink ``keep_live`` was given (``%load_ext iolab`` gives the results
history's, ``iolab.record.history.keep_live``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.atomic import write_atomic, write_json
from ..core.errors import InputError
from ..core.readable import interval_text, wrapped
from ..core.runfolders import not_found, run_folders

MIME = "application/vnd.iolab.core.results+json"
FILE_ENV = "IOLAB_RESULTS_FILE"
EXECUTED_ENV = "IOLAB_EXECUTED"  # set in the kernel of iolab.report.publish.execute
FIELDS = ("name", "value", "unit", "source", "low", "high", "note", "detail")


def record(
    name: str, value: Any, unit: str = "", source: str = "", low: Any = None, high: Any = None, note: str = ""
) -> None:
    """Record one key figure: ``value`` in ``unit`` (e.g. "IO/s", "µs", "cycles/IO"), where
    it comes from (``source``), its interval ``[low, high]`` if it has one (say which in
    ``note``: "95 % t interval over 3 repeats", "90 % of bootstrap resamples")."""
    if not isinstance(name, str) or not name.strip():
        raise InputError(
            f"a result needs a name (a non-empty string), not {name!r}: record('peak IOPS', value, 'IO/s')"
        )
    entry = {
        "name": name.strip(),
        "value": _plain(value, name),
        "unit": str(unit),
        "source": str(source),
        "low": _plain(low, name),
        "high": _plain(high, name),
        "note": str(note),
    }
    _emit({"results": [entry]}, f"recorded: {describe(entry)}")


def record_many(entries: Iterable[Mapping[str, Any]], what: str = "") -> None:
    """Record several results as one output (one line for people, ``what`` they are): each
    entry takes ``record``'s arguments, e.g. {"name": "IOPS at QD 32", "value": 231000,
    "unit": "IO/s", "low": ..., "high": ...}. For the per-setting figures a comparison reads
    (``iolab seeds``), which would bury a notebook's key figures: they are marked
    ``"detail": true``, and write-ups and batch indexes fold them away."""
    bundle = []
    for entry in entries:
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"a result needs a name (a non-empty string), not {name!r}")
        bundle.append(
            {
                "name": name.strip(),
                **{k: _plain(entry.get(k), name) for k in ("value", "low", "high")},
                **{k: str(entry.get(k) or "") for k in ("unit", "source", "note")},
                "detail": True,
            }
        )
    if bundle:
        _emit({"results": bundle}, f"recorded {len(bundle)} results" + (f": {what}" if what else ""))


def record_runs(runs: Any) -> None:
    """Record the run folders behind this notebook's results (absolute paths). ``runs``:
    a table of runs (its run folders found by ``iolab.core.runfolders``), a run folder, a
    folder of run folders, or a list of any of these."""
    found, missing = run_folders(runs)
    text = f"recorded: {len(found)} run folder{'s' * (len(found) != 1)}"
    if found:
        text += f" ({', '.join(sorted({str(f.parent) for f in found}))})"
    if missing:
        text += f"; {not_found(missing)}"
    _emit({"run_folders": [str(f) for f in found]}, text)


def describe(entry: Mapping[str, Any]) -> str:
    """'peak IOPS = 231,000 IO/s [225,000; 236,000] (95 % t interval)': one result in words."""
    unit = f" {entry['unit']}" if entry.get("unit") and entry["value"] is not None else ""
    text = f"{entry['name']} = {show(entry['value'])}{unit}"
    if entry.get("low") is not None or entry.get("high") is not None:
        text += " " + interval_text(show(entry.get("low")), show(entry.get("high")))
    return text + (f" ({entry['note']})" if entry.get("note") else "")


def show(value: Any) -> str:
    """A value for people: thousands separated, four significant digits below 1,000."""
    if value is None:
        return "none"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,.0f}" if abs(value) >= 1000 or value == int(value) else f"{value:.4g}"


def collect(notebook: Any) -> dict[str, list]:
    """{"results": [...], "run_folders": [...]} from an executed notebook's outputs (a path,
    or a notebook node / dict): every result recorded, a later one of the same name
    replacing the earlier (in the earlier's place), and every run folder once."""
    nb = json.loads(Path(notebook).read_text()) if isinstance(notebook, (str, os.PathLike)) else notebook
    bundles = [output.get("data", {}).get(MIME) for cell in nb.get("cells", []) for output in cell.get("outputs", [])]
    return merged(json.loads(b) if isinstance(b, str) else b for b in bundles if b)


def merged(bundles: Iterable[Mapping[str, Any]]) -> dict[str, list]:
    """Bundles of this MIME type (and results files) made one: results by name, the
    later replacing the earlier; run folders once each, in order."""
    results: dict[str, dict] = {}
    folders: dict[str, None] = {}
    for bundle in bundles:
        for entry in bundle.get("results", []):
            results[entry["name"]] = {k: entry.get(k) for k in FIELDS if k != "detail" or entry.get("detail")}
        folders.update(dict.fromkeys(bundle.get("run_folders", [])))
    return {"results": list(results.values()), "run_folders": list(folders)}


def keep_with(executed: str | os.PathLike, parameters: Mapping[str, Any] | None, side: str | os.PathLike) -> dict:
    """Store what ``executed`` recorded (``collect``) and the ``parameters`` it ran with in
    its ``metadata["iolab"]``, and in the JSON file ``side``; both rewritten atomically.
    Returns that dict: {"results", "run_folders", "parameters"}."""
    executed = Path(executed)
    nb = json.loads(executed.read_text())
    kept = {**collect(nb), "parameters": json.loads(json.dumps(dict(parameters or {}), default=str))}
    nb.setdefault("metadata", {})["iolab"] = kept
    write_atomic(executed, json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")  # as nbformat writes
    write_json(side, kept)
    return kept


_LIVE: dict[str, Any] = {"sink": None, "cell": [], "shell": None}


def keep_live(sink: Callable[[dict, bool], None] | None) -> None:
    """In a live kernel (``live_shell``), call ``sink(kept, finished)`` after each cell that
    recorded: ``kept`` is what the cell recorded ({"results", "run_folders"}, as ``merged``),
    ``finished`` False when the cell raised. None stops it (``%unload_ext iolab``)."""
    _LIVE["sink"] = sink
    shell = _LIVE["shell"]
    if sink is None and shell is not None:
        shell.events.unregister("post_run_cell", _cell_ended)
        _LIVE["shell"] = None


def live_shell():
    """The IPython shell of a live kernel (JupyterLab, Notebook, VS Code), or None: outside
    a kernel, in a terminal IPython, and in a headless run (``IOLAB_HEADLESS=1``: papermill
    through ``publish.execute``, which keeps the whole notebook's results itself)."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    if os.environ.get("IOLAB_HEADLESS") == "1" or os.environ.get(EXECUTED_ENV) == "1":
        return None
    return shell


def _cell_ended(result) -> None:
    bundles, _LIVE["cell"] = _LIVE["cell"], []
    if bundles and _LIVE["sink"] is not None:
        _LIVE["sink"](merged(bundles), getattr(result, "success", True))


def _emit(bundle: dict, text: str) -> None:
    """Display ``bundle`` as this MIME type with ``text`` (the text alone outside IPython),
    add it to the file ``IOLAB_RESULTS_FILE`` names, if any, and in a live kernel to what
    its cell hands ``keep_live``'s sink."""
    from IPython import get_ipython  # IPython is there in a kernel; imported only when recording
    from IPython.display import display

    text = wrapped(text)
    if get_ipython() is not None:
        display({MIME: bundle, "text/plain": text}, raw=True)
    else:
        print(text)
    shell = live_shell()
    if shell is not None and _LIVE["sink"] is None and not _LIVE.get("said"):
        _LIVE["said"] = True
        print("not added to the results history: %load_ext iolab adds what a live kernel records")
    elif shell is not None and _LIVE["sink"] is not None:
        if _LIVE["shell"] is not shell:
            shell.events.register("post_run_cell", _cell_ended)
            _LIVE["shell"] = shell
        _LIVE["cell"].append(bundle)
    if os.environ.get(FILE_ENV):
        path = Path(os.environ[FILE_ENV])
        try:
            old = json.loads(path.read_text()) if path.exists() and path.stat().st_size else {}
        except ValueError:
            raise InputError(
                f"{FILE_ENV}={path} holds no JSON iolab can add to; remove it or point {FILE_ENV} at a new file"
            ) from None
        write_json(path, merged([old, bundle]))


def _plain(value: Any, name: str) -> Any:
    """``value`` as JSON has it: numpy scalars as int/float, NaN and ±inf as None."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict, str)):
        try:
            value = value.item()  # numpy scalars, 0-d arrays
        except (ValueError, TypeError):
            pass
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        if str(value) in ("<NA>", "NaT", "nan"):  # pandas' missing values
            return None
        raise InputError(
            f"result {name!r}: {value!r} ({type(value).__name__}) is not a number, a string, "
            "a bool or None; record one of those"
        ) from None
    return number if math.isfinite(number) else None
