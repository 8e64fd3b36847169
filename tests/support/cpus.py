"""The CPU this test process measures on: pytest-xdist's workers (make test runs one per CPU
and one more) take them in turn, so pinned runs of different CPUs never queue on one lock."""

import os

_ALLOWED = sorted(os.sched_getaffinity(0))
CPU = _ALLOWED[int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % len(_ALLOWED)]
OTHER_CPU = next((c for c in _ALLOWED if c != CPU), CPU)  # for what must stay off the measured CPU


def unshared(flags: str) -> str:
    """A run's ``flags`` without its ``shared_cpu`` one: the suite's workers share the machine's
    CPUs with the runs they measure (a real other load, rightly flagged), and a test of another
    check asks about that one alone."""
    return " | ".join(f for f in str(flags).split(" | ") if f and not f.startswith("shared_cpu:"))
