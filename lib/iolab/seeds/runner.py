"""``iolab seeds``' runner: a plan of ``iolab.seeds.manifest`` run as one ``iolab batch`` per
seed into ``OUT/seed-NNN/`` (resumable; a failed experiment is kept with its error), then each
seed's page and the index (``iolab.seeds.pages``), and ``OUT/plan.json`` (which seeds ran at
which level, read by the pages).

    todo = manifest.plan(manifest.load_seeds(), out, level="quick")
    check_outputs(todo, out)        # a user's file or folder there is refused before anything runs
    run(todo, out, "quick")
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.outputs import check_folder, claim_folder, claim_output, write_json_output
from ..report.batch import Manifest, run_batch
from ..report.batch import check_outputs as check_batch_outputs
from . import pages as seed_pages
from .manifest import Planned


def run(
    todo: Sequence[Planned],
    out: str | os.PathLike,
    level: str,
    devices: Sequence[str] = (),
    on_done=None,
    force: bool = False,
) -> dict[str, list[dict[str, Any]]]:
    """Run the plan: one batch per seed into ``out/seed-NNN`` (resumable; a failed
    experiment is kept with its error), each seed's page written as soon as its batch
    ends, and the index page. Returns each seed's batch records. A folder or file there iolab
    did not write is refused before anything runs (``iolab.core.outputs``), unless ``force``."""
    out = Path(out).resolve()
    check_outputs(todo, out, force)
    claim_folder(out, force=force)
    by_seed: dict[str, list[Planned]] = {}
    for p in todo:
        by_seed.setdefault(p.seed.ident, []).append(p)
    records: dict[str, list[dict[str, Any]]] = {}
    _write_plan(out, todo, level, devices, force)
    for ident, planned in by_seed.items():
        seed = planned[0].seed
        manifest = Manifest(planned[0].run.notebook, [p.run for p in planned], out / seed.slug, 1, seed.path)
        records[ident] = run_batch(manifest, out / seed.slug, 1, on_done=on_done, force=force)
        seed_pages.write_seed_page(seed, out, force)
        seed_pages.write_index(out, force)
    return records


def check_outputs(todo: Sequence[Planned], out: Path, force: bool = False) -> None:
    """Refuse, before anything runs, a plan that would write into a folder or over a file iolab
    did not write (``iolab.core.outputs``): ``out``, its pages and plan.json, each seed's batch.
    Nothing is written."""
    check_folder(out, force=force)
    for name in ["plan.json", "index.html"] + [f"{p.seed.slug}.html" for p in todo]:
        claim_output(out / name, force=force)
    for slug in dict.fromkeys(p.seed.slug for p in todo):
        check_batch_outputs(out / slug, [p.run for p in todo if p.seed.slug == slug], force)


def _write_plan(out: Path, todo: Sequence[Planned], level: str, devices: Sequence[str], force: bool = False) -> None:
    """``out/plan.json``: what this command runs, read by the pages (which seeds, which level)."""
    old = {}
    try:
        old = json.loads((out / "plan.json").read_text())
    except (OSError, ValueError):
        pass
    seeds = {
        **old.get("seeds", {}),
        **{
            p.seed.ident: {"manifest": str(p.seed.path), "level": level, "devices": [str(d) for d in devices]}
            for p in todo
        },
    }
    write_json_output(
        out / "plan.json",
        {
            "seeds": dict(sorted(seeds.items())),
            "notes": {f"{p.seed.ident}/{p.experiment.name}": p.notes for p in todo}
            | {k: v for k, v in old.get("notes", {}).items() if k.split("/")[0] not in {p.seed.ident for p in todo}},
        },
        force=force,
    )


__all__ = ["run", "check_outputs"]
