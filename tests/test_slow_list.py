"""tests/slow_tests.txt names tests that exist: a renamed or removed test would otherwise drop
out of the list silently and run in the daily loop again (or a typo would mark nothing)."""

from __future__ import annotations

import re

from tests.slow_list import LIST, REPO, node_id, read_slow_list


def test_every_listed_slow_test_is_a_test_function_of_its_file() -> None:
    listed = read_slow_list()
    assert len(listed) > 50, f"{LIST} lost its contents"
    missing = []
    for node in sorted(listed):
        module, *names = node.split("::")
        function = re.sub(r"\[.*\]$", "", names[-1])
        source = (REPO / module).read_text(encoding="utf-8") if (REPO / module).is_file() else ""
        if not re.search(rf"^\s*(async )?def {re.escape(function)}\(", source, re.M):
            missing.append(node)
    assert not missing, f"not tests any more (remake the list: tests/slow_list.py): {missing}"


def test_a_junit_case_maps_to_its_node_id() -> None:
    assert node_id("tests.cli.test_cli", "test_all_four_modes") == \
        "tests/cli/test_cli.py::test_all_four_modes"
    assert node_id("tests.engines.test_library.TestX", "test_y[a]") == \
        "tests/engines/test_library.py::TestX::test_y[a]"
    assert node_id("nowhere.at_all", "test_z") is None
