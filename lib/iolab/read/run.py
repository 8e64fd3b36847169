"""One run folder's files, typed and read defensively: what ran, on what, and what came out.

    run = RunFolder(path)
    run.meta()        # run.json: run_id, status, times, error (a RunFileError when it cannot be read)
    run.params()      # params.json: the swept values, the fio options or t/io_uring flags, cpus, target
    run.snapshot()    # system.json: the machine snapshot (iolab.core.system.snapshot)
    run.argv()        # argv.json: the command line, a list of words
    run.command()     # the run as one command line to copy: fio --name=... --bs=4k ..., or t/io_uring's
    run.job()         # job.fio: the job file fio ran
    run.hosts()       # hosts.json: the fio servers of a client/server run
    run.fio_report()  # fio.json: fio's report (iolab.read.fiojson.run_document)
    run.samples()     # samples_stat.csv: /proc/stat per sample (iolab.read.samples.read_stat)

Every file is read through ``iolab.core.runfiles``: one that is missing where it must be,
empty, cut short, not JSON or of another type than iolab wrote is a ``RunFileError`` naming
it. params.json, system.json, argv.json and job.fio are absent from runs made by hand and some
older layouts: their readers give an empty value then, so a caller that only looks at them
never has to tell "absent" from "empty"; ``present`` says which. The file names are
``iolab.core.runfiles``'.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import runfiles
from ..core.errors import RunFileError
from ..core.runfiles import ARGV_JSON, FIO_JSON, HOSTS_JSON, JOB_FIO, PARAMS_JSON, RUN_JSON, SYSTEM_JSON
from .fiojson import FioDocument, run_document
from .samples import read_stat


class RunFolder:
    """The files of the run folder at ``path`` (see the module docstring)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def present(self, name: str) -> bool:
        """Whether the run folder holds the file ``name``."""
        return (self.path / name).is_file()

    def meta(self) -> dict[str, Any]:
        """run.json, holding ``run_id`` and ``status``."""
        return runfiles.read_json(self.path / RUN_JSON, keys=("run_id", "status"))

    def status(self) -> str | None:
        """The run's status (``ok``, ``failed``, ``interrupted``, ``running``), None when its
        run.json cannot be read."""
        try:
            status = self.meta()["status"]
        except (RunFileError, OSError):
            return None
        return status if isinstance(status, str) else None

    def params(self) -> dict[str, Any]:
        """params.json ({} without one)."""
        return runfiles.read_json(self.path / PARAMS_JSON, optional=True) or {}

    def snapshot(self) -> dict[str, Any]:
        """system.json, the machine snapshot ({} without one)."""
        return runfiles.read_json(self.path / SYSTEM_JSON, optional=True) or {}

    def argv(self) -> list[str]:
        """The command line of argv.json, word by word ([] without one): its ``argv`` (a bare
        list in older runs)."""
        doc = runfiles.read_json(self.path / ARGV_JSON, (dict, list), optional=True) or []
        words = doc.get("argv", []) if isinstance(doc, dict) else doc
        with runfiles.guard(self.path / ARGV_JSON):
            return [str(word) for word in words]

    def cpu_affinity(self) -> list[int]:
        """The CPUs the tool was pinned to (argv.json's ``cpu_affinity``; [] without)."""
        doc = runfiles.read_json(self.path / ARGV_JSON, (dict, list), optional=True) or {}
        cpus = doc.get("cpu_affinity") if isinstance(doc, dict) else None
        return [int(c) for c in cpus or []]

    def command(self, order: Sequence[str] = ()) -> str:
        """The run as one command line a reader can copy: fio's job as ``fio --name=JOB
        --option=value ...`` (its job file holds exactly these options, params.json's
        ``fio_options``; those named in ``order`` first, to read beside another command), or
        t/io_uring's argv behind ``taskset -c`` with the CPUs it was pinned to. '' for a run
        that recorded neither (made by hand)."""
        argv = self.argv()
        if argv and "io_uring" in Path(argv[0]).name:
            cpus = self.cpu_affinity()
            pin = ["taskset", "-c", ",".join(map(str, cpus))] if cpus else []
            return shlex.join([*pin, "t/io_uring", *argv[1:]])
        opts = self.params().get("fio_options") or {}
        if not opts:
            return ""
        section = next(iter(re.findall(r"^\[(.+)\]", self.job(), re.M)), "job")
        keys = [k for k in dict.fromkeys([*order, *opts]) if k in opts]
        return shlex.join(["fio", f"--name={section}", *(f"--{k}={opts[k]}" for k in keys)])

    def hosts(self) -> list[dict[str, Any]]:
        """The fio servers of a client/server run, hosts.json's ``hosts`` (one dict each)."""
        path = self.path / HOSTS_JSON
        hosts = runfiles.read_json(path, keys=("hosts",))["hosts"]
        with runfiles.guard(path):
            if not all(isinstance(h, dict) for h in hosts):
                raise TypeError("hosts is not a list of JSON objects")
        return hosts

    def job(self) -> str:
        """The text of job.fio ('' without one: a t/io_uring run)."""
        return runfiles.read_text(self.path / JOB_FIO, optional=True, errors="replace") or ""

    def fio_report(self) -> FioDocument:
        """fio's report of fio.json."""
        return run_document(self.path / FIO_JSON)

    def samples(self) -> pd.DataFrame:
        """/proc/stat per sample, samples_stat.csv (``iolab.read.samples.read_stat``)."""
        return read_stat(self.path)


def run_commands(runs: Any) -> pd.DataFrame:
    """The command lines behind ``runs`` (a table of runs, a run folder, a folder of them, or
    a list: ``iolab.core.runfolders.run_folders``), each once: "runs" (how many ran it: the
    repeats of one setting differ only in their job's name, whose "-rN" is left out) and
    "command" (``RunFolder.command``), in the order they first ran. What a notebook shows
    under a study, to copy."""
    from ..core.runfolders import run_folders

    found, _ = run_folders(runs)
    counted: dict[str, int] = {}
    for folder in found:
        try:
            line = RunFolder(folder).command()
        except (OSError, RunFileError):
            continue
        if line:
            line = re.sub(r"(--name=\S+?)-r\d+(?=\s|$)", r"\1", line)
            counted[line] = counted.get(line, 0) + 1
    return pd.DataFrame({"runs": list(counted.values()), "command": list(counted)}, columns=["runs", "command"])


def show_commands(runs: Any) -> None:
    """Print ``run_commands(runs)`` as a notebook shows it: each command whole on a line of its
    own under how many runs ran it, plain text to select and copy (a table would cut or wrap
    a command inside an option)."""
    table = run_commands(runs)
    if table.empty:
        print("no run recorded a command line (runs made by hand keep none)")
        return
    for r in table.itertuples():
        print(f"# {r.runs} run{'s' * (r.runs != 1)}:\n{r.command}")
