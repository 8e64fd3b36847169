"""The notebooks' Jupyter kernel: the project's kernelspec (``iolab``, this environment's
Python), which papermill, ``make lab`` and the write-ups run notebooks on, and the check
that the ``iolab`` kernel Jupyter finds is this project's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

KERNEL_NAME = "iolab"  # the notebooks' kernelspec: this environment's Python, named for the project
KERNEL_DISPLAY = "Python 3 (iolab)"  # what scripts/setup.sh and iolab init name it


def install_kernel(prefix: str | os.PathLike | None = None) -> Path:
    """The project's kernelspec (``KERNEL_NAME``: this interpreter) installed under ``prefix``
    (this environment's by default), as ``python -m ipykernel install --sys-prefix --name iolab``
    does; its folder."""
    from ipykernel.kernelspec import install

    return Path(install(kernel_name=KERNEL_NAME, display_name=KERNEL_DISPLAY, prefix=str(prefix or sys.prefix)))


def headless_kernel() -> str:
    """The kernel papermill runs notebooks on: the project's (``iolab``) when installed, else
    ipykernel's ``python3``, which Jupyter maps to this interpreter (a pip install that has
    not run ``iolab init``)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        return "python3"
    return KERNEL_NAME


def kernel_warning() -> str:
    """'' when the notebooks' kernel (``iolab``) is this project's; else a line saying
    which kernel Jupyter would use instead and how to put the project's back."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        return f"no '{KERNEL_NAME}' Jupyter kernel; run make setup (or iolab init) to install '{KERNEL_DISPLAY}'"
    if spec.display_name == KERNEL_DISPLAY:
        return ""
    return (
        f"the '{KERNEL_NAME}' kernel Jupyter finds is '{spec.display_name}' ({spec.resource_dir}), "
        f"not '{KERNEL_DISPLAY}': the notebooks may run without iolab; remove that folder or run make setup"
    )
