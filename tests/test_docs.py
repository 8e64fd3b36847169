"""The README is the door (one screen to the three commands, a map of docs/), and the manual's
links and commands are alive: every relative link names a file here, every ``iolab CMD`` a
command the parser knows."""

import re

from support.paths import REPO

DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md", REPO / "benchmarks" / "README.md"]
DOCS += sorted((REPO / "docs").glob("*.md"))
FIRST_SCREEN = 40  # lines a terminal or a forge shows before the reader scrolls


def test_the_readme_is_a_door():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: the manual goes to docs/"
    first = "\n".join(lines[:FIRST_SCREEN])
    for command in ("make demo", "make test", "make lab"):
        assert command in first, f"{command!r} is not on the README's first screen"
    text = "\n".join(lines)
    for word in ("target", "run folder", "study", "write-up", "seed"):
        assert f"**{word}**" in text, f"the README does not define {word!r}"
    assert all(f"docs/{p.name}" in text for p in (REPO / "docs").glob("*.md")), "the README's map misses a page"


def test_every_relative_link_names_a_file():
    dead = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            path = target.split("#", 1)[0]
            if path and "://" not in path and not (doc.parent / path).exists():
                dead.append(f"{doc.relative_to(REPO)} -> {target}")
    assert not dead, dead


def test_every_command_the_manual_names_exists():
    from iolab.cli import build_parser

    known = set(build_parser().names)
    named = set()
    for doc in DOCS:  # in code: `iolab CMD ...` inline, or a code block's line
        named |= set(re.findall(r"`(?:\.venv/bin/)?iolab ([a-z][a-z-]*)", doc.read_text()))
        named |= set(re.findall(r"^ {4,}(?:\.venv/bin/)?iolab ([a-z][a-z-]*)", doc.read_text(), flags=re.M))
    assert named and not named - known, f"the docs name commands iolab lacks: {sorted(named - known)}"


def test_every_environment_variable_iolab_reads_is_documented():
    """Each ``IOLAB_*`` name the library spells out is a row of docs/command-line.md's table."""
    import re

    named = set()
    for path in (REPO / "lib" / "iolab").rglob("*.py"):
        named |= set(re.findall(r"[\"'](IOLAB_[A-Z_]+)[\"']", path.read_text()))
    table = (REPO / "docs" / "command-line.md").read_text()
    missing = sorted(v for v in named if f"| `{v}` |" not in table)
    assert named and not missing, f"add to docs/command-line.md's environment variables: {missing}"
