"""The tests measured slow on a 2-core machine, kept in tests/slow_tests.txt: conftest marks them
`slow`, so `pytest -m "not slow"` (the daily loop) leaves them out without a decorator in every
file. Remade from a JUnit report of a run of the suite:

    python -m pytest -q -n auto --junitxml=/tmp/junit.xml
    python -m tests.slow_list /tmp/junit.xml [--over SECONDS]

Tests that need a real process (signals, kills, closed pipes, terminals, entry points, import
probes) are marked `slow` where they are written, whatever their time.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIST = Path(__file__).resolve().parent / "slow_tests.txt"
HEADER = """\
# Tests that took over {over:g} s in a run of the suite on a 2-core machine (2 xdist
# workers): marked `slow` by tests/conftest.py, left out of the daily loop
# (`pytest -m "not slow"`).
# Remade by `python -m tests.slow_list JUNIT.xml` (see tests/slow_list.py); one node id a line.
"""


def read_slow_list(path: Path = LIST) -> frozenset[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return frozenset()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def node_id(classname: str, name: str) -> str | None:
    """pytest's node id of a JUnit test case (its module is the longest existing file)."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        module = "/".join(parts[:cut]) + ".py"
        if (REPO / module).is_file():
            return "::".join([module, *parts[cut:], name])
    return None


def slow_cases(report: Path, over: float) -> list[str]:
    found = []
    for case in ET.parse(report).iter("testcase"):
        if float(case.get("time", "0")) > over and case.find("skipped") is None:
            found.append(node_id(case.get("classname", ""), case.get("name", "")))
    return sorted(n for n in found if n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a JUnit XML report of a run of the suite")
    parser.add_argument("--over", type=float, default=1.5, help="seconds (default 1.5)")
    args = parser.parse_args()
    ids = slow_cases(args.report, args.over)
    LIST.write_text(HEADER.format(over=args.over) + "".join(f"{i}\n" for i in ids),
                    encoding="utf-8")
    print(f"{len(ids)} tests over {args.over:g} s written to {LIST}")


if __name__ == "__main__":
    main()
