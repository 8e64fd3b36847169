"""report: notebooks and what they make — papermill execution and the notebooks' kernel, write-ups, batch, reproduce, the demo, the workspace. The features built on it (compare, nvmelab, seeds) have folders of their own. May import every layer below it."""

__all__ = [  # what the package exports: its modules
    "batch",
    "batch_index",
    "contract",
    "demo",
    "kernel",
    "notebook_html",
    "offline",
    "publish",
    "reproduce",
    "templating",
    "workspace",
    "writeup_appendix",
    "writeup_header",
]
