"""The order of the collected tests under pytest-xdist: the long ones first, spread over the
workers (``tests/conftest.py: pytest_collection_modifyitems``)."""

import os


def spread_long_tests(items: list) -> None:
    """Reorder ``items`` in place. pytest-xdist's ``load`` scheduler hands each worker a first
    chunk of (tests / workers / 4) consecutive tests: sorted plainly, all the long ones
    (notebooks, browser, searches, the NVMe tier) fell in worker 0's chunk and it ran 6 minutes
    while the others idled after 3. So the long tests go, longest first, to the worker with the
    least long work so far, at the head of that worker's chunk; the browser tests as one group,
    as they share one JupyterLab and one Chromium per worker. The NVMe tier's test goes last
    under xdist: it reads what the controller's background boot left (``support.nvme_tier``)."""
    in_background = "PYTEST_XDIST_WORKER" in os.environ  # the controller boots the tier

    def weight(item):  # rough seconds of one CPU
        if item.get_closest_marker("nvme_boot"):
            return 0 if in_background else 80
        if item.get_closest_marker("browser"):  # a notebook's Run All and its checks in JupyterLab
            return 25
        return 15 if item.get_closest_marker("slow") else 0

    last = [i for i in items if in_background and i.get_closest_marker("nvme_boot")]
    items[:] = [i for i in items if i not in last]

    groups: dict = {}
    for item in items:
        if weight(item):
            groups.setdefault("browser" if item.get_closest_marker("browser") else item.nodeid, []).append(item)
    long_ = sorted(groups.values(), key=lambda g: sum(map(weight, g)), reverse=True)
    short = [i for i in items if not weight(i)]
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    chunk = max(len(items) // workers // 4, 2)
    heads: list[list] = [[] for _ in range(workers)]
    for group in long_:
        min(heads, key=lambda h: sum(map(weight, h))).extend(group)
    if workers < 2 or len(items) < 2 * workers or max(map(len, heads)) > chunk:
        items[:] = [i for g in long_ for i in g] + short + last
        return
    ordered, rest = [], iter(short)
    for head in heads:  # worker k's first chunk: its long tests, then short ones to fill it
        ordered += head + [next(rest) for _ in range(chunk - len(head))]
    items[:] = ordered + list(rest) + last
