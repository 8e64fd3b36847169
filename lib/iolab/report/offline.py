"""What a page would fetch from the network when it loads, and the page with those fetches
disabled: the write-ups (``iolab.report.publish``) are offline files, so whatever a notebook
names on the network (a script, a stylesheet, an image) stays inert and is listed instead.

    page, disabled = offline(page)
    assert network_fetches(page) == []
"""

from __future__ import annotations

import re

# elements a browser fetches by itself (anchors are followed only when clicked)
_FETCHING = re.compile(
    r"<(?:script|link|img|iframe|frame|source|track|video|audio|embed|object|input|image|use)\b"
    r"(?:[^>\"']|\"[^\"]*\"|'[^']*')*>",
    re.I,
)
_NETWORK = r"\s*(?:(?:https?|ftp):)?//"
_FETCH_ATTR = re.compile(
    r"(\s)(src|href|xlink:href|srcset|data|poster)(\s*=\s*)(\""
    + _NETWORK
    + r"[^\"]*\"|'"
    + _NETWORK
    + r"[^']*'|"
    + _NETWORK
    + r"[^\s>]+)",
    re.I,
)
_STYLE = re.compile(r"(<style\b[^>]*>)(.*?)(</style>)|(\sstyle\s*=\s*)(\"[^\"]*\"|'[^']*')", re.I | re.S)
_CSS_FETCH = re.compile(
    r"@import\s+(?:url\()?\s*[\"']?" + _NETWORK + r"[^;]*;?|url\(\s*[\"']?" + _NETWORK + r"[^)]*\)", re.I
)


def network_fetches(page: str) -> list[str]:
    """Every URL ``page`` would make a browser fetch from the network when it loads: the
    src/href/srcset/data/poster of scripts, stylesheets, images, frames and media, CSS
    ``url(...)`` and ``@import`` in style elements and attributes. Links (``<a href>``)
    are not fetches."""
    found = [m.group(4).strip("\"' ") for tag in _FETCHING.finditer(page) for m in _FETCH_ATTR.finditer(tag.group(0))]
    for m in _STYLE.finditer(page):
        found += [f.group(0) for f in _CSS_FETCH.finditer(m.group(2) or m.group(5) or "")]
    return found


def offline(page: str) -> tuple[str, list[str]]:
    """``page`` with every network fetch disabled: the attribute renamed
    (``src=`` -> ``data-offline-src=``, the element stays, inert), CSS ``url()`` of the
    network replaced by ``none``; and the URLs disabled."""
    disabled: list[str] = []

    def attr(m: re.Match) -> str:
        disabled.append(m.group(4).strip("\"' "))
        return f"{m.group(1)}data-offline-{m.group(2).replace(':', '-')}{m.group(3)}{m.group(4)}"

    def css(m: re.Match) -> str:
        disabled.append(m.group(0))
        return "" if m.group(0).lower().startswith("@import") else "none"

    page = _FETCHING.sub(lambda tag: _FETCH_ATTR.sub(attr, tag.group(0)), page)
    page = _STYLE.sub(
        lambda m: (
            (m.group(1) + _CSS_FETCH.sub(css, m.group(2)) + m.group(3))
            if m.group(1)
            else m.group(4) + _CSS_FETCH.sub(css, m.group(5))
        ),
        page,
    )
    return page, disabled
