"""The NVMe tier's guest under TCG: one host thread per vCPU (QEMU's default, ``thread=multi``)
against one for all vCPUs (``thread=single``), side by side.

Each round boots the tier (``tests/support/nvme_tier.py``: four controllers, two vCPUs on two
NUMA nodes, at the tests' niceness as in the suite) once per mode, the order alternating from
round to round, after one boot that is not counted (the kernel, the initramfs and the host's
caches made and warmed), and prints the CPU time of the boot's process and all it waited for
(QEMU: the guest's whole work; not the burners) and its wall time; a boot whose tier failed is
printed and left out. With ``--busy N`` (default 2), N CPU burners (``stress-ng --cpu``, at
niceness 0, not counted) keep the host's CPUs busy as the other tests do in ``make test``:
there a vCPU that spins waiting for another one the host has descheduled burns CPU time the
other tests need. ``--busy 0``: an idle host.

    .venv/bin/python benchmarks/tier_threads.py [--rounds 2] [--busy 2]

Needs root, the NVMe lab's tools (make setup-nvmelab) and TCG (under KVM both modes are one);
about 5 minutes a round.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ONE = """
import json, resource, sys
from support import nvme_tier
got = nvme_tier.tier(nvme_tier.spec().model_copy(update={"tcg_thread": sys.argv[1]}))
if "skip" in got:
    sys.exit(got["skip"])
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": got["returncode"], "wall_s": got["wall_s"], "accel": got["accel"],
                  "cpu_s": used.ru_utime + used.ru_stime, "last": "".join(got["said"].splitlines()[-1:])}))
"""


def boot(mode: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", ONE, mode], cwd=REPO / "tests", capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"tier_threads: the {mode} boot failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="rounds of one boot per mode (default 2)")
    ap.add_argument("--busy", type=int, default=2, help="CPU burners beside the guest (default 2; 0: idle host)")
    args = ap.parse_args()
    warm = boot("single")  # not counted: builds what the lab needs once, warms the host's caches
    if warm["accel"] != "tcg":
        sys.exit(f"tier_threads: the lab boots with {warm['accel']} here, not TCG: the two modes are one")
    burners = None
    if args.busy:
        burners = subprocess.Popen(
            ["stress-ng", "--cpu", str(args.busy), "--timeout", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    seen: dict[str, list[dict]] = {"multi": [], "single": []}
    try:
        for r in range(args.rounds):
            for mode in ("multi", "single") if r % 2 == 0 else ("single", "multi"):
                got = boot(mode)
                if got["rc"] == 0:
                    seen[mode].append(got)
                print(
                    f"round {r + 1} {mode:6}: {got['cpu_s']:6.1f} CPU-s, {got['wall_s']:6.1f} s wall, "
                    f"exit {got['rc']} ({got['accel']}; {got['last'].strip()})",
                    flush=True,
                )
    finally:
        if burners:
            os.killpg(burners.pid, signal.SIGTERM)
            burners.wait()
    if not all(seen.values()):
        sys.exit("tier_threads: no boot of one mode passed its tier: no ratio")
    mid = {m: statistics.median(g["cpu_s"] for g in v) for m, v in seen.items()}
    wall = {m: statistics.median(g["wall_s"] for g in v) for m, v in seen.items()}
    print(
        f"median of {args.rounds} round(s), {args.busy} CPU burner(s): single/multi CPU time "
        f"{mid['single'] / mid['multi']:.2f}, wall time {wall['single'] / wall['multi']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
