"""The fio command lines the seed write-ups print (tests/fixtures/seed_commands.txt), and one
of them adapted to this machine."""

import re
import shlex

from support.paths import FIXTURES

SEEDS = FIXTURES / "seed_commands.txt"


def seed_commands() -> list[tuple[str, str]]:
    """(SEED:LINE, command) of every fio command line the seed write-ups print."""
    rows = [line.split(": ", 1) for line in SEEDS.read_text().splitlines() if line and not line.startswith("#")]
    return [(where, command) for where, command in rows]


def adapted(command: str, cpu: int, block: str, char: str, runtime: str = "300ms") -> list[str]:
    """A seed's command with only its runtime, CPUs and devices changed for this machine."""
    text = re.sub(r"--runtime=\d+", f"--runtime={runtime}", command)
    text = re.sub(r"taskset -c \S+", f"taskset -c {cpu}", text)
    text = re.sub(r"--cpus_allowed=\S+", f"--cpus_allowed={cpu}", text)
    return shlex.split(text.replace("/dev/nvme0n1", block).replace("/dev/ng0n1", char))
