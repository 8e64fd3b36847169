"""The write guard for many jobs at once: ``guard_job_texts`` gives, for each job text,
exactly what ``iolab.machine.jobcheck.guard_job_text`` gives — its JobCheck, or the error it
raises, same class and same words — with fio asked once per chunk of texts rather than once
per text.

Each ``fio --parse-only`` pays fio's start-up once and a little per job section, so a search
of 10,000 cells asked one at a time spent most of its plan asking fio (benchmarks/README.md,
``search_plan.py``).
Here the texts are joined into one job file (each section a job) and fio's parse debug
lines (``Parsing section [x]`` bounds each section) are split back into the texts they came
from, in order. What stays per text:

* a text with a ``[global…]`` section, an ``include`` or a ``wait_for`` reaches past its own
  sections: it is parsed alone;
* fio stops at the first job it drops (exit 1, "Bad option <…>" / "failed parsing …"): the
  sections before it are read, the text holding it is parsed alone (its own FioError, naming
  its job), and the rest goes on in the next call;
* what fio says besides (warnings) cannot be told apart by section: a chunk where fio says
  anything is split in halves until each part is silent or one text;
* anything else unexpected (fio's sections out of step with the texts, a failure the text
  alone does not repeat): that chunk is parsed text by text.

Many texts that fail on the same line (an axis value fio rejects in every cell it is in)
would cost one fio call each: once one text is parsed alone and fio names the line it
rejects, each later text with that very line in a section with the same ``ioengine`` line
(fio's options depend on its engine) gets the same FioError, its own job named, without a
call, and carries ``like``: the index of the text that was parsed. A text with more than
one such line is parsed alone (which line fio names first is fio's to say).
"""

from __future__ import annotations

import re
import subprocess
from collections import deque
from collections.abc import Callable, Sequence

from ..core.errors import FioError, IolabError
from .fio import fio_binary
from .jobcheck import (
    _DEBUG,
    _FAILED,
    _OPTION,
    _SECTION,
    PARSE_ONLY,
    Job,
    JobCheck,
    _inherit,
    _judge,
    _Looks,
    _parse_text,
    remember_parse,
    remembered,
)

CHUNK_SECTIONS = 2000  # job sections per fio call: ~0.2 s of fio; well under fio's 4,096 jobs
_HEADER = re.compile(r"^\s*\[(.*)\]\s*$")
_REJECTED = re.compile(r"^(?:Bad option <(.+)>|fio: failed parsing (.+))$")  # the line fio names
_ALONE = re.compile(r"^\s*(?:\[\s*global|include\s|wait_for\s*=)", re.M)

Parsed = tuple[list[Job], str, list[str]]


def guard_job_texts(
    texts: Sequence[str],
    allow_destructive: bool = False,
    *,
    fio: str | None = None,
    cwd=None,
    on_parsed: Callable[[int], None] | None = None,
) -> list[JobCheck | IolabError]:
    """For each of ``texts`` (job-file text iolab built), what ``guard_job_text(text,
    allow_destructive, fio=fio, cwd=cwd)`` gives: its JobCheck, or the IolabError it would
    raise (FioError, UnsafeTargetError, TargetError), returned, not raised. fio parses many
    texts per call (module docstring); ``on_parsed(n)`` is told as each n more are parsed."""
    fio = fio or fio_binary()
    parsed = parse_texts(texts, fio, on_parsed)
    looks = _Looks()  # one scratch file read once for thousands of jobs
    out: list[JobCheck | IolabError] = []
    for p in parsed:
        if isinstance(p, IolabError):
            out.append(p)
            continue
        try:
            out.append(_judge(*p, allow_destructive, cwd, looks))
        except IolabError as exc:
            out.append(exc)
    return out


def parse_ahead(texts: Sequence[str], fio: str | None = None) -> None:
    """fio's reading of the job texts a campaign is about to run, asked once per chunk
    (``parse_texts``) and remembered, so that each run's own guard (``jobcheck.guard_job_text``,
    judged as the run starts) finds it rather than paying a ``fio --parse-only`` of its own. A
    text fio refuses is not remembered: its run raises fio's words as it would have."""
    fio = fio or fio_binary()
    new = [t for t in dict.fromkeys(texts) if not remembered(fio, t)]
    for text, parsed in zip(new, parse_texts(new, fio)):
        if not isinstance(parsed, IolabError):
            remember_parse(fio, text, parsed)


def parse_texts(
    texts: Sequence[str], fio: str, on_parsed: Callable[[int], None] | None = None
) -> list[Parsed | FioError]:
    """fio's reading of each text (``jobcheck._parse_text``'s (jobs, parsed_by, warnings)),
    or its FioError, asking fio once per chunk of up to ``CHUNK_SECTIONS`` sections."""
    texts = list(texts)
    first = {t: i for i, t in reversed(list(enumerate(texts)))}  # the same text parses once
    headers = {i: _headers(texts[i]) for i in first.values()}
    together = [i for i in sorted(first.values()) if headers[i] is not None]
    work: deque[list[int]] = deque()
    chunk, size = [], 0
    for i in together:
        chunk.append(i)
        size += len(headers[i])
        if size >= CHUNK_SECTIONS:
            work.append(chunk)
            chunk, size = [], 0
    work.extend([chunk] if chunk else [])
    work.extend([[i] for i in sorted(set(first.values()) - set(together))])
    done: dict[int, Parsed | FioError] = {}
    lines: dict[str, list[int]] | None = None  # line -> texts holding it, made at the first rejection
    rejected: set[str] = set()  # the lines fio rejected so far
    while work:
        before = len(done)
        chunk = [i for i in work.popleft() if i not in done]
        if len(chunk) == 1:
            done[chunk[0]] = _alone(texts[chunk[0]], fio)
        elif chunk:
            said, sections, failed = _ask(fio, [texts[i] for i in chunk])
            ends = _ends([len(headers[i]) for i in chunk])
            names = [name for name, _ in sections]
            if not failed and said:  # warnings belong to some text: halve until they are placed
                work.extendleft([chunk[len(chunk) // 2 :], chunk[: len(chunk) // 2]])
            elif not failed and names == [h for i in chunk for h in headers[i]]:
                done.update(_split_back(chunk, ends, sections))
            elif not failed:
                work.extendleft([[i] for i in reversed(chunk)])  # out of step: one by one
            else:
                at = next((k for k, (lo, hi) in enumerate(ends) if lo < len(sections) <= hi), 0)
                bad = chunk[at]
                done[bad] = alone = _alone(texts[bad], fio)
                if not isinstance(alone, FioError):  # not this text's failure: the chunk one by one
                    work.extendleft([[i] for i in reversed(chunk)])
                    continue
                if _said(alone.stderr) == said and names[: ends[at][0]] == [h for i in chunk[:at] for h in headers[i]]:
                    done.update(_split_back(chunk[:at], ends, sections))  # fio said nothing else: all theirs
                else:
                    work.appendleft(chunk[:at])
                work.appendleft(chunk[at + 1 :])
                lines = _lines_of(texts, together) if lines is None else lines
                done.update(_alike(bad, alone, texts, lines, done, rejected))
        if on_parsed and len(done) > before:
            on_parsed(len(done) - before)
    return [done[first[t]] for t in texts]


def _headers(text: str) -> list[str] | None:
    """The section names of ``text`` when it can be parsed beside others: None when it has
    no section, begins with anything but one, or reaches past its sections (``_ALONE``)."""
    names: list[str] = []
    for line in text.splitlines():
        bare = line.strip()
        if not bare or bare[0] in ";#":
            continue
        if bare[0] == "[" and (m := _HEADER.match(line)):
            names.append(m.group(1))
        elif not names:
            return None  # an option before any section would join the text before it
    return names if names and not _ALONE.search(text) else None


def _split_back(chunk: list[int], ends: list[tuple[int, int]], sections: list) -> dict[int, Parsed]:
    """Each text of ``chunk`` with its own sections of fio's reading (its [global] none)."""
    return {i: (_inherit(sections[lo:hi]), "fio --debug=parse", []) for i, (lo, hi) in zip(chunk, ends)}


def _alone(text: str, fio: str) -> Parsed | FioError:
    """``jobcheck._parse_text`` of one text: the per-text path (its FioError returned)."""
    try:
        return _parse_text(text, fio)
    except FioError as exc:
        return exc


def _ask(fio: str, texts: list[str]) -> tuple[list[str], list[tuple[str, dict[str, str | None]]], bool]:
    """(fio's other stderr lines, the sections it read in order with their options, whether
    it failed) for ``texts`` joined into one job file."""
    joined = "\n".join(t if t.endswith("\n") else t + "\n" for t in texts)  # one job file, on fio's stdin
    done = subprocess.run([fio, *PARSE_ONLY, "-"], input=joined, capture_output=True, text=True)
    said = _said(done.stderr)
    sections: list[tuple[str, dict[str, str | None]]] = []
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        if ("Parsing section [" in line or "handle_option=" in line) and (m := _DEBUG.match(line)):
            if s := _SECTION.match(m.group(1)):
                sections.append((s.group(1), {}))
            elif (o := _OPTION.match(m.group(1))) and sections:
                sections[-1][1][o.group(1)] = None if o.group(2) == "(null)" else o.group(2)
    failed = done.returncode != 0 or any(marker in line for line in said for marker in _FAILED)
    return said, sections, failed


def _said(stderr: str) -> list[str]:
    """fio's stderr lines that are not its parse debug lines (as ``jobcheck.parse_jobfile``)."""
    return [line for line in (stderr or "").splitlines() if line.strip() and not _DEBUG.match(line)]


def _ends(counts: list[int]) -> list[tuple[int, int]]:
    """(first, past-last) section of each text, from each text's count of sections."""
    out, at = [], 0
    for n in counts:
        out.append((at, at + n))
        at += n
    return out


def _lines_of(texts: list[str], which: list[int]) -> dict[str, list[int]]:
    """Each stripped line -> the texts (of ``which``) that hold it, in order."""
    index: dict[str, list[int]] = {}
    for i in which:
        for line in {line.strip() for line in texts[i].splitlines()}:
            index.setdefault(line, []).append(i)
    return index


def _sections(text: str) -> list[tuple[str, set[str]]]:
    """(name, its stripped lines) of each section of ``text``."""
    out: list[tuple[str, set[str]]] = []
    for line in text.splitlines():
        if m := _HEADER.match(line):
            out.append((m.group(1), set()))
        elif out:
            out[-1][1].add(line.strip())
    return out


def _alike(bad: int, exc: FioError, texts: list[str], lines: dict[str, list[int]], done: dict, rejected: set[str]):
    """(index, FioError) of the later texts not yet parsed that hold the one line fio rejected
    in text ``bad``, in a section with the same ioengine line, and no other line fio rejected
    so far (``rejected``, updated here)."""
    said = [m.group(1) or m.group(2) for line in _said(exc.stderr) if (m := _REJECTED.match(line.strip()))]
    rejected.update(x.strip() for x in said)
    if len(said) != 1:
        return []
    line = said[0].strip()
    where = [(name, body) for name, body in _sections(texts[bad]) if line in body]
    named = f"job {where[0][0]} dropped" if where else ""
    if not where or named not in str(exc):
        return []
    engine = {x for x in where[0][1] if x.startswith("ioengine=")}
    others = rejected - {line}
    out = []
    for j in lines.get(line, []):
        if j <= bad or j in done or any(other in texts[j] for other in others):
            continue
        hits = [
            n
            for n, body in _sections(texts[j])
            if line in body and engine == {x for x in body if x.startswith("ioengine=")}
        ]
        if hits:
            own = f"job {hits[0]} dropped"
            like = FioError(str(exc).replace(named, own), exc.returncode, exc.stderr.replace(named, own))
            like.like = bad  # the text fio parsed alone, whose error this repeats
            out.append((j, like))
    return out


__all__ = ["guard_job_texts", "parse_ahead", "parse_texts", "CHUNK_SECTIONS"]
