"""``iolab compare A B``: two result sets read (``sides``), their cells matched by fio's
option names (``matching``), B against A with an interval and a verdict (``versus``), and
the page that shows it (``page``); why B differs, the causes ranked (``explain``)."""

__all__ = [  # what the package exports: its modules
    "explain",
    "explain_page",
    "matching",
    "page",
    "sides",
    "versus",
]
