"""The one version of iolab (pyproject.toml reads it from here; ``iolab.__version__`` is it)."""

__version__ = "0.2.0"
