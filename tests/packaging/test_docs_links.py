"""The README is a front door and docs/ holds the rest (issue 33, item 9): README.md stays
under 15 KB, links each page of docs/, and every relative link in README.md and docs/*.md -
to a file, a picture or a heading - leads somewhere that exists. A repository path the pages
name in backticks (`engines/...`, `tests/...`) exists too, so a moved module cannot leave the
docs pointing at nothing."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
README_LIMIT = 15 * 1024

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# Paths inside the repository that the pages name in backticks: `engines/cli/words.py`.
REPO_PATH = re.compile(r"`((?:engines|app|tests|bench|packaging|resources|docs|\.ci)/[^`\s]*)`")


def page_id(path: Path) -> str:
    return str(path.relative_to(REPO))


def prose(path: Path) -> str:
    """The page without its code blocks (a `#` there is a shell comment, not a heading)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    """The ids GitHub gives the page's headings: lower case, punctuation dropped, spaces to
    hyphens, a repeated heading numbered -1, -2 ..."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", prose(path), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


def relative_links(path: Path) -> list[str]:
    return [target for target in LINK.findall(prose(path))
            if not re.match(r"[a-z][a-z0-9+.-]*:", target)]  # http:, https:, mailto:


def test_the_readme_is_a_front_door_under_15_kb() -> None:
    size = len(README.read_bytes())
    assert size < README_LIMIT, f"README.md is {size} bytes; keep it under {README_LIMIT}"


def test_the_readme_links_every_page_of_docs() -> None:
    linked = {(README.parent / unquote(target.split("#")[0])).resolve()
              for target in relative_links(README) if target.split("#")[0]}
    unlinked = [page_id(page) for page in PAGES[1:] if page.resolve() not in linked]
    assert not unlinked, f"README.md does not link {unlinked}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    assert relative_links(page) or page != README, "README.md links nothing"
    broken = []
    for target in relative_links(page):
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / unquote(file_part)).resolve() if file_part else page
        if not destination.exists():
            broken.append(f"{target}: no file {destination}")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: {page_id(destination)} has no heading #{anchor}")
        elif not destination.is_relative_to(REPO):
            broken.append(f"{target}: outside the repository")
    assert not broken, f"{page_id(page)}:\n" + "\n".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_repository_path_the_page_names_exists(page: Path) -> None:
    missing = []
    for named in REPO_PATH.findall(page.read_text(encoding="utf-8")):
        if "<" in named or "..." in named:  # a pattern such as `bench/results/gpu-<date>.json`
            continue
        if not (list(REPO.glob(named.rstrip("/"))) if "*" in named else
                (REPO / named).exists()):
            missing.append(named)
    assert not missing, f"{page_id(page)} names paths that do not exist: {missing}"
