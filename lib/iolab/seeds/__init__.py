"""The seeds feature: the write-ups a user reproduces (data/seeds/*.yaml), run as a batch of
notebooks (``iolab seeds``), their published figures against this machine's, and one page per
seed (``manifest``: the seed manifests and their plan; ``runner``: the plan run, a batch per
seed; ``comparisons``: the published-vs-local table; ``setups``: the author's set-up against
this one; ``pages``: the HTML)."""

__all__ = [  # what the package exports: its modules
    "causes",
    "commands",
    "comparisons",
    "evidence",
    "manifest",
    "pages",
    "runner",
    "setups",
    "shape",
]
