"""The network namespaces ``iolab.machine.hosts.local_servers`` leaves behind."""

import subprocess


def left_by(*pids: int) -> set[str]:
    """The network namespaces ``hosts.local_servers`` made for the processes ``pids`` (it names
    them iolab-<pid>-<n>) that are still there: what they left behind. Other tests' namespaces
    are not counted: one may stand for a while on purpose (a SIGKILLed owner's, until the
    repair removes it)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()
    prefixes = tuple(f"iolab-{pid % 100000}-" for pid in pids)
    return {line.split()[0] for line in listed if line.strip() and line.split()[0].startswith(prefixes)}
