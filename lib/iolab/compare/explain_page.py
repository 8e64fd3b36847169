"""``iolab explain A B --html FILE``: the explanation as one offline HTML page, as
``iolab compare``'s (``iolab.report.templating``: no script, no fetch).

    write_output("explain.html", html(explain_paths(a, b)))
"""

from __future__ import annotations

import datetime

from ..core.readable import percent
from ..report.templating import page
from .explain import Closed, Explanation, lines

PAGE = """{% extends layout %}{% from "table.html" import table %}{% block body -%}
<h1>Why B differs from A</h1>
<p>A = <code>{{ a }}</code><br>B = <code>{{ b }}</code></p>
{% if not_comparable %}<div class='banner'>Not comparable: {{ not_comparable }}.</div>{% endif %}
<p>{{ gap }}</p>
{% if workload %}<h2>A different job</h2>
<p class='note'>Said first: when the two sides ran different jobs, the comparison may stop here.</p>
{{ table(["option", "A", "B", "share of the gap", "evidence"], workload) }}{% endif %}
<h2>{{ ranked_title }}</h2>
{% if ranked %}{{ table(["", "difference", "A", "B", ranked_share, "evidence"], ranked) }}{% else %}
<p>No recorded difference{{ beyond }} accounts for it.</p>{% endif %}
{% if verified %}<div class='banner'>{{ verified }}</div>{% endif %}
{% if unranked %}<h2>Differences with no evidence of an effect here</h2>
{{ table(["difference", "A", "B", "evidence"], unranked) }}{% endif %}
<p class='note'>Each share is what that cause alone could account for, ln(expected B ÷ A) ÷ ln(gap), from what
both sides measured (other programs' share of the measuring CPUs, the clock, fio's cycles per IO, the device's
requests or bytes per fio IO); it assumes that cause's resource was the limit, so it is an upper bound, and shares
overlap rather than add up (iolab.compare.explain). Made by <code>iolab explain</code> on {{ when }}.</p>
{%- endblock %}"""


def html(found: Explanation, verified: Closed | None = None) -> str:
    """The explanation (and a ``--verify`` result) as one offline HTML page."""
    done = found.compared
    shown = found.gap_shown

    def share(c) -> str:
        return percent(100 * c.share) if c.share else "–"

    return page(
        PAGE,
        f"iolab explain: {done.a.path.name} vs {done.b.path.name}",
        a=str(done.a),
        b=str(done.b),
        not_comparable=done.versus.not_comparable,
        gap="The gap: " + lines(found)[2].removeprefix("the gap: "),
        workload=[(c.what.removeprefix("the job's "), c.a, c.b, share(c), c.evidence) for c in found.workload],
        ranked_title="Ranked by the share of the gap each could account for"
        + (" beyond the different job" if found.workload else "")
        if shown
        else "No gap shown by the repeats: the differences by the size of their measured effect",
        ranked_share="share of the gap" if shown else "",
        ranked=[(i, c.what, c.a, c.b, share(c) if shown else "", c.evidence) for i, c in enumerate(found.ranked, 1)],
        beyond=" beyond the different job" if found.workload else "",
        verified=verified.words(found.metric) if verified else "",
        unranked=[(c.what, c.a, c.b, c.evidence) for c in found.unranked],
        when=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


__all__ = ["html"]
