"""The repository cites only documents it holds: no path outside it (the rules and design live in docs/), and
every relative link of every Markdown page resolves."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEXT = (".py", ".md", ".yaml", ".toml", ".sh", ".js", ".html", ".css", ".txt", ".json")
# documents that exist only outside the repository; docs/rules.md and docs/design.md are the project's own
OUTSIDE = re.compile(r"(?<![\w/.])(RULES|DESIGN|CLARIFICATIONS|STYLE)\.md|shared/seeds|\.\./shared")


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out.stdout.splitlines() if p.endswith(TEXT) and (ROOT / p).is_file()]


def test_no_file_cites_a_document_outside_the_repository():
    bad = []
    for path in tracked_files():
        if path.name == "test_references.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                bad.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)


def test_every_relative_markdown_link_resolves():
    broken = []
    for page in (p for p in tracked_files() if p.suffix == ".md"):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):          # http:, mailto:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, "\n".join(broken)


def test_the_checker_catches_an_outside_citation():
    assert OUTSIDE.search("see RULES.md §2") and OUTSIDE.search("seed shared/seeds/001.txt")
    assert not OUTSIDE.search("see docs/rules.md §2") and not OUTSIDE.search("docs/design.md")
