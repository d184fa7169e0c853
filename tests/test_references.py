"""The repository cites only documents it holds: no path outside it (the rules and design live in docs/), every
relative link of every Markdown page resolves, and every repository path the documents name in their text exists."""

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


# ----- paths named in the text of the documents (issue 60) ------------------------------------------------------
#: the documents whose text is checked: what a reader follows (the README, docs/, the bot reports, the player
#: guides) and the header comments of the shipped configs
def documents() -> list[Path]:
    return [p for p in tracked_files()
            if p.relative_to(ROOT).as_posix() == "README.md" or p.suffix == ".md" and p.relative_to(ROOT).parts[0]
            in ("docs", "checkpoints", "envs") or p.suffix == ".yaml" and p.relative_to(ROOT).parts[0] == "configs"]


#: a path inside the repository: one of its top-level folders, then the rest; ``<game>`` and ``*`` stand for any
#: name, ``{ppo,dqn}`` for each of the names. Not inside a longer path or URL (``kahve/configs/...``, ``http://``)
#: nor after ``SHA:`` (``git show 15adde9:tools/x.py`` names a file of an old commit).
REPO_PATH = re.compile(r"(?<![\w/.:~-])((?:envs|agents|scripts|configs|checkpoints|tests|tools|docs|\.ci)/"
                       r"[\w./*<>{},-]*[\w/*>}])")
#: a run folder's own layout (agents/training/run_dir.py), not the repository's checkpoints/ folder
RUN_FOLDER = re.compile(r"checkpoints/latest\b")


def path_exists(cited: str) -> bool:
    """Whether the path, read as a pattern (``<...>`` and ``*`` any name, ``{a,b}`` each), names something."""
    brace = re.search(r"\{([^{}]*)\}", cited)
    if brace:
        return all(path_exists(cited[:brace.start()] + alt + cited[brace.end():]) for alt in brace.group(1).split(","))
    pattern = re.sub(r"<[^<>/]*>", "*", cited)
    return any(ROOT.glob(pattern.rstrip("/"))) if "*" in pattern else (ROOT / pattern).exists()


def cited_paths(text: str, yaml: bool = False) -> list[tuple[int, str]]:
    """``(line, path)`` of every repository path in ``text``: not link targets (the link check reads those, from
    the page's folder), not in a paragraph that points to git history (``git show``: files that have left the
    tree), only in comments of a YAML file."""
    text = re.sub(r"\]\([^)]*\)", "]", text)
    found, paragraph = [], []

    def flush():
        if not any("git show" in line for _, line in paragraph):
            found.extend((no, m.group(1)) for no, line in paragraph for m in REPO_PATH.finditer(line)
                         if not RUN_FOLDER.match(m.group(1)))
        paragraph.clear()
    for no, line in enumerate(text.splitlines(), 1):
        if yaml:
            line = line.partition("#")[2]
        if line.strip():
            paragraph.append((no, line))
        else:
            flush()
    flush()
    return found


def test_every_repository_path_the_documents_name_exists():
    missing = []
    for page in documents():
        for no, cited in cited_paths(page.read_text(encoding="utf-8"), yaml=page.suffix == ".yaml"):
            if not path_exists(cited):
                missing.append(f"{page.relative_to(ROOT)}:{no}: {cited}")
    assert not missing, "paths named in the documents that are not in the repository:\n" + "\n".join(missing)


def test_the_path_check_reads_paths_as_a_reader_does():
    text = """See `agents/policies/bot.py`, tools/wheel_smoke.sh and configs/pishti/ppo.yaml.
A [link](envs/pishti.md) is the link check's; so is http://example.org/docs/x.md and kahve/configs/x.yaml.
The run folder's checkpoints/latest/state.json is not the repository's.

Gone, says git history: `git show 15adde9:tools/gone.py`, with tools/also_gone.py.

Patterns: `agents/policies/heuristics/<game>.py`, `configs/<game>/{ppo,dqn}.yaml`, `agents/ismcts.py`."""
    cited = [path for _, path in cited_paths(text)]
    assert cited == ["agents/policies/bot.py", "tools/wheel_smoke.sh", "configs/pishti/ppo.yaml",
                     "agents/policies/heuristics/<game>.py", "configs/<game>/{ppo,dqn}.yaml", "agents/ismcts.py"]
    assert [path_exists(p) for p in cited] == [True, True, True, True, True, False]
    assert not path_exists("agents/heuristics/<game>.py") and not path_exists("configs/<game>/{ppo,nothing}.yaml")
    assert cited_paths("game: pishti  # see docs/dqn.md\nnote: tools/x.py\n", yaml=True) == [(1, "docs/dqn.md")]
