"""README's set-up and test lines are what a newcomer runs and what `.ci/run` runs, as written
(issue 32): the first code block a reader meets is the set-up line, which ends by opening the
window; the test line runs the suite on every core; `.ci/run` reads both from README.md with
its own function; and the window the set-up line opens is found on an X display the way CI
looks for it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
CI = REPO / ".ci" / "run"


def code_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M)]


def ci_readme_line(name: str) -> str:
    """The line .ci/run's own `readme_line` function takes from README.md."""
    script = CI.read_text(encoding="utf-8")
    function = re.search(r"^readme_line\(\) \{\n.*?^\}\n", script, re.S | re.M)
    assert function, ".ci/run has no readme_line function"
    done = subprocess.run(["bash", "-c", 'fail() { echo "$*" >&2; exit 1; }\n'
                           + function[0] + f"readme_line {name}"],
                          cwd=REPO, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_first_code_block_is_the_set_up_line_and_it_opens_the_window() -> None:
    setup = ci_readme_line("setup")
    assert code_blocks(README.read_text(encoding="utf-8"))[0] == setup
    steps = [step.strip() for step in setup.split("&&")]
    assert steps[-1] == "python main.py"
    assert "python3 -m venv .venv" in steps and "pip install -e ." in steps
    assert steps.index("pip install -e .") < len(steps) - 1


def test_the_test_line_runs_the_suite_on_every_core_with_the_dev_extra() -> None:
    line = ci_readme_line("tests")
    assert "pip install -e '.[dev]'" in line and "python -m pytest" in line
    assert re.search(r"-n (auto|\d+)", line)
    with open(REPO / "pyproject.toml", "rb") as handle:
        dev = tomllib.load(handle)["project"]["optional-dependencies"]["dev"]
    assert any(re.match(r"pytest-xdist\b", requirement) for requirement in dev)


def test_ci_runs_the_two_lines_and_no_test_command_of_its_own() -> None:
    script = CI.read_text(encoding="utf-8")
    assert 'setup_line="$(readme_line setup)"' in script
    assert 'test_line="$(readme_line tests)"' in script
    assert 'bash -euo pipefail -c "$setup_line"' in script
    assert 'bash -euo pipefail -c "$test_line"' in script
    assert not re.search(r"^\s*python -m pytest", script, re.M)


@pytest.mark.slow  # a real window on a real X server
@pytest.mark.skipif(not (shutil.which("Xvfb") and shutil.which("xwininfo")),
                    reason="needs Xvfb and xwininfo (CI installs xvfb and x11-utils)")
def test_the_window_of_python_main_py_is_found_on_a_virtual_display(tmp_path: Path) -> None:
    """What .ci/run does with the set-up line's last step, here with this checkout's Python:
    `python main.py` under Qt's xcb plugin maps a top-level window called "SA3 Studio"."""
    display = f":{200 + os.getpid() % 300}"
    server = subprocess.Popen(["Xvfb", display, "-screen", "0", "1920x1080x24", "-nolisten",
                               "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb",
           "SA3_STUDIO_HOME": str(tmp_path / "home")}
    app = None
    try:
        app = subprocess.Popen([sys.executable, "main.py"], cwd=REPO, env=env,
                               start_new_session=True, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        mapped = False
        while time.monotonic() < deadline and app.poll() is None:
            tree = subprocess.run(["xwininfo", "-display", display, "-root", "-tree"],
                                  capture_output=True, text=True, timeout=30).stdout
            if '"SA3 Studio"' in tree:
                mapped = True
                break
            time.sleep(0.5)
        output = "" if mapped else (app.communicate(timeout=5)[0] or b"").decode() \
            if app.poll() is not None else ""
        assert mapped, f"no 'SA3 Studio' window appeared (exit {app.poll()}): {output[-2000:]}"
        assert app.poll() is None, "the window closed right after it opened"
    finally:
        if app is not None and app.poll() is None:
            os.killpg(app.pid, signal.SIGTERM)
            try:
                app.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(app.pid, signal.SIGKILL)
                app.wait(timeout=30)
        server.terminate()
        server.wait(timeout=30)
