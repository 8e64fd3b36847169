"""Made-up recorded results (``iolab.record.results``' shape) and the machine they ran on,
for the results history."""

from datetime import UTC, datetime

T0 = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
SNAPSHOT = {
    "hostname": "bench-7",
    "kernel": "6.1.0-test-amd64",
    "fio_version": "fio-3.99",
    "cpu_model": "Test CPU @ 3.0GHz",
    "device": "nvme0n1",
    "nvme_device": {"model": "Fast SSD 9000", "firmware_rev": "1.2.3"},
}


def kept(*results, folders=(), **parameters):
    """What an executed notebook keeps: its results, run folders and parameters."""
    return {"results": list(results), "run_folders": list(folders), "parameters": parameters}


def result(name, value, unit="IO/s", low=None, high=None, **more):
    """One recorded result."""
    return {"name": name, "value": value, "unit": unit, "source": "made up", "low": low, "high": high, **more}
