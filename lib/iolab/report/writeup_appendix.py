"""The provenance appendix at the end of a write-up (``iolab.report.publish``): the command
that runs the notebook again, the software (iolab's git commit, tool and package versions),
the machine its runs measured, and each run folder with a SHA-256 of its raw outputs — the
facts from ``iolab.record.provenance``, laid out here.

    html = appendix(nb, executed, given, run_folders)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..core.readable import readable_number
from ..record import provenance
from .templating import render

APPENDIX = """{% from "table.html" import table %}<div class="iolab-writeup iolab-appendix">
<h2>Provenance</h2>
<h3>Run it again</h3>
{% if command -%}
<p>From the iolab checkout{{ at }}, then write this page again with <code>iolab publish out.ipynb</code>:</p>
<pre>{{ command }}</pre>
<p><code>iolab reproduce {{ notebook }}</code> does both and compares the recorded results with the new ones.</p>
{%- else -%}
<p class="note">The notebook was not run by papermill: its source and parameters are not recorded, so no \
command can run it again.</p>
{%- endif %}
<h3>Software</h3>
{{ table(("", "version"), software) }}
<p class="note">The commit, Python and packages: when this page was written; kernel, fio and perf: \
{{ machine_from }}.</p>
<h3>Machine</h3>
{{ table(None, machine) }}
<p class="note">{{ machine_from[:1] | upper }}{{ machine_from[1:] }}.</p>
<h3 id="iolab-run-folders">Run folders</h3>
{% if folders -%}
{{ table(("run folder", "files", "bytes", "SHA-256 of its raw outputs"), folders, numeric=(1, 2)) }}
<p class="note">The digest covers every file of a run folder (fio.json, tio.txt, perf files, params.json, \
job.fio, argv.json, system.json, samples) except run.json (iolab's status, times and pid) and hidden files: \
for each, sorted by relative path, <code>path NUL size NUL bytes</code>. \
<code>iolab.record.provenance.folder_digest(folder)</code> computes it again.</p>
{%- else -%}
<p class="note">The notebook recorded no run folders (<code>iolab.record.results.record_runs</code>), so none \
is listed or hashed here.</p>
{%- endif %}
</div>"""
MONO = Markup('<span class="mono">{}</span>')


def appendix(nb, executed: Path, given: Mapping[str, Any], run_folders: list[str]) -> str:
    """Provenance as HTML: how to run it again, the software, the machine, the run folders."""
    git = provenance.checkout()
    machine, machine_from = provenance.machine_of(run_folders)
    return render(
        APPENDIX,
        command=provenance.rerun_command(nb.metadata.get("papermill", {}).get("input_path"), given),
        at=f" at commit {git['commit'][:12]}" if git["commit"] else "",
        notebook=executed.name,
        software=software_rows(nb, git, machine),
        machine=provenance.machine_rows(machine),
        machine_from=machine_from,
        folders=folder_rows(run_folders),
    )


def software_rows(nb, git: Mapping[str, Any], machine: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(what, version): iolab and its commit, the tools that measured, the Pythons, the packages."""
    if git["commit"]:
        state = (
            f"with changes: {git['changed']} file(s) changed, {git['untracked']} untracked" if git["dirty"] else "clean"
        )
        commit = MONO.format(git["commit"]) + f" ({state})"
    else:
        commit = f"unknown: {git['why']}"
    tools = provenance.tool_versions(machine)
    rows = [
        ("iolab", git["iolab_version"]),
        ("iolab git commit", commit),
        ("iolab checkout", git["repo"] or "–"),
        ("Linux kernel", tools["kernel"] or "–"),
        ("fio", tools["fio"] or "not installed"),
        ("perf", tools["perf"] or "not installed"),
        ("Python (kernel)", nb.metadata.get("language_info", {}).get("version", "–")),
        ("Python (publish)", tools["python"]),
    ]
    return rows + [(name, version or "not installed") for name, version in provenance.package_versions().items()]


def folder_rows(run_folders: list[str]) -> list[tuple[str, Any, str, Any]]:
    """(run folder, files, bytes, SHA-256 or why there is none) of each run folder."""
    digests = [provenance.folder_digest(f) for f in run_folders]
    return [
        (d["path"], d["files"], readable_number(str(d["bytes"])), MONO.format(d["sha256"]) if d["sha256"] else d["why"])
        for d in digests
    ]
