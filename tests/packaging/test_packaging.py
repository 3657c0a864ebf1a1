"""Installing like a desktop app (issue 24): the wheel carries the resources (demo recipes,
theme, icons, desktop entry); installed outside the clone, the app finds them through
importlib.resources, renders a demo take and opens a themed window; a missing resource is said
as such (not as a disk problem); the desktop entry is valid and points at the program."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from engines import paths
from engines.cli import desktop
from engines.paths import ResourceMissingError, resource_file, resources_dir

REPO = Path(__file__).resolve().parents[2]
VALIDATE = shutil.which("desktop-file-validate")
needs_validator = pytest.mark.skipif(
    VALIDATE is None, reason="desktop-file-validate is not installed (apt desktop-file-utils)")
posix_only = pytest.mark.skipif(sys.platform == "win32",
                                reason="venv layout and desktop entries are POSIX here")


def _source_tree(into: Path) -> Path:
    """The files git would commit (tracked, and new ones not ignored): what a clean clone has,
    without build/, dist/ or a venv that a build could pick up."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def _has_setuptools(major: int) -> bool:
    try:
        return int(importlib.metadata.version("setuptools").split(".")[0]) >= major
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs the git checkout to know which files are the source")
    work = tmp_path_factory.mktemp("wheel")
    source = _source_tree(work / "src")
    # With the setuptools pyproject asks for here, build in this environment: an isolated
    # build downloads setuptools, and a machine without a package index (the GPU one) cannot.
    isolation = ["--no-isolation"] if _has_setuptools(68) else []
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", *isolation, "--outdir",
                            str(work / "dist"), str(source)], capture_output=True, text=True,
                           timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return next((work / "dist").glob("sa3_studio-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv outside the clone with the wheel in it. Its dependencies are borrowed from
    this test's environment through a .pth file (only the path: that environment's own .pth
    files, an editable install's finder among them, do not run), so nothing is downloaded;
    CI's acceptance installs them for real."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_path('purelib'))"], capture_output=True,
                               text=True, check=True).stdout.strip())
    borrowed = [sysconfig.get_path("purelib"), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    (site / "borrowed_dependencies.pth").write_text(
        "".join(f"{path}\n" for path in borrowed if path and Path(path).resolve() != REPO))
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0 and "no such option: --python" in done.stderr:
        pytest.skip("this pip cannot install into another environment (--python, pip 22.3+)")
    assert done.returncode == 0, done.stderr
    return venv


def _run(cmd: list[str], home: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    environ.update(SA3_STUDIO_HOME=str(home), QT_QPA_PLATFORM="offscreen", **env)
    return subprocess.run(cmd, cwd=home.parent, env=environ, capture_output=True, text=True,
                          timeout=300)


# --------------------------------------------------------------------------------------------
# The wheel


@pytest.mark.slow
def test_the_wheel_holds_the_resources_and_both_entry_points(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names
                            if n.endswith(".dist-info/entry_points.txt"))
    shipped = {f"sa3_studio_resources/{p.relative_to(REPO / 'resources').as_posix()}"
               for p in (REPO / "resources").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert shipped <= names, sorted(shipped - names)
    assert "sa3_studio_resources/demo/recipes.json" in shipped
    assert "sa3_studio_resources/theme/dark.qss" in shipped
    assert "sa3_studio_resources/icons/app.svg" in shipped
    assert "main.py" in names and not any(n.startswith("tests/") for n in names)
    # every module of the source it was built from (a subfolder without __init__.py would be
    # left out silently)
    source = wheel.parent.parent / "src"
    modules = {p.relative_to(source).as_posix() for package in ("app", "engines")
               for p in (source / package).rglob("*.py")}
    assert len(modules) > 100 and modules <= names, sorted(modules - names)
    assert "[console_scripts]\nsa3-studio = main:main" in entry_points
    assert "[gui_scripts]\nsa3-studio-gui = main:gui_main" in entry_points


@pytest.mark.slow
@posix_only
def test_an_installed_wheel_finds_its_resources_and_renders_a_demo_take(
        installed: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    python, bin_dir = installed / "bin" / "python", installed / "bin"
    where = _run([str(python), "-c", "import engines, importlib.resources as r; "
                  "from engines.paths import resources_dir; print(engines.__file__); "
                  "print(resources_dir()); print(r.files('sa3_studio_resources'))"], home)
    assert where.returncode == 0, where.stderr
    engines_file, folder, found = where.stdout.splitlines()
    assert engines_file.startswith(str(installed)) and folder == found
    assert Path(folder).is_relative_to(installed) and (Path(folder) / "theme/dark.qss").is_file()

    # the issue's own steps: this exited 2 with "check free disk space"
    out = tmp_path / "a.wav"
    made = _run([str(bin_dir / "sa3-studio"), "generate", "--prompt", "coin pickup",
                 "--seconds", "1", "--out", str(out)], home)
    assert made.returncode == 0, made.stderr
    assert out.stat().st_size > 44_100 * 2 * 2 * 0.9  # about 1 s of 16-bit stereo


@pytest.mark.slow
@posix_only
def test_the_installed_window_opens_themed_with_its_icons(installed: Path,
                                                         tmp_path: Path) -> None:
    home = tmp_path / "home"
    # run as a script from packaging/: `main`, `app` and `engines` come from the venv
    opened = _run([str(installed / "bin" / "python"), str(REPO / "packaging/open_probe.py")],
                  home)
    assert opened.returncode == 0, opened.stderr[-3000:]
    report = json.loads(opened.stdout.strip().splitlines()[-1])
    assert report["stylesheet_chars"] > 100
    assert report["icon_renders"] is True
    assert Path(report["resources"]).is_relative_to(installed)


@pytest.mark.slow
@posix_only
def test_a_missing_resource_is_named_not_blamed_on_the_disk(installed: Path,
                                                            tmp_path: Path) -> None:
    home = tmp_path / "home"
    recipes = next(installed.rglob("sa3_studio_resources/demo/recipes.json"))
    saved = recipes.read_bytes()
    recipes.unlink()
    try:
        made = _run([str(installed / "bin" / "sa3-studio"), "generate", "--prompt", "x",
                     "--seconds", "1", "--out", str(tmp_path / "b.wav")], home)
    finally:
        recipes.write_bytes(saved)
    assert made.returncode == 2
    line = made.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line
    assert "demo/recipes.json is missing" in line and "reinstall" in line
    assert "disk space" not in line and "Traceback" not in made.stderr
    assert not (tmp_path / "b.wav").exists()


@pytest.mark.slow
@posix_only
@needs_validator
def test_the_installed_command_adds_a_valid_desktop_entry(installed: Path,
                                                          tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "xdg"
    done = _run([str(installed / "bin" / "sa3-studio"), "install-desktop"], home,
                XDG_DATA_HOME=str(data))
    assert done.returncode == 0, done.stderr
    entry = data / "applications" / "sa3-studio.desktop"
    assert f"Exec={installed / 'bin' / 'sa3-studio-gui'}\n" in entry.read_text()
    assert subprocess.run([VALIDATE, str(entry)], capture_output=True).returncode == 0


# --------------------------------------------------------------------------------------------
# In this process


def test_from_the_clone_the_resources_are_the_repository_folder() -> None:
    assert resources_dir() == REPO / "resources" or resources_dir().name == "resources"
    assert resource_file("demo", "recipes.json").read_bytes() == (
        REPO / "resources/demo/recipes.json").read_bytes()


def test_a_missing_resource_file_is_one_sentence(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setattr(paths, "resources_dir", lambda: tmp_path)
    with pytest.raises(ResourceMissingError) as missing:
        resource_file("demo", "recipes.json")
    text = str(missing.value)
    assert "demo/recipes.json is missing" in text and str(tmp_path) in text
    assert text.endswith("reinstall SA3 Studio.") and "\n" not in text


@pytest.mark.parametrize(("arg", "expected"), [
    ("/usr/bin/sa3-studio-gui", "/usr/bin/sa3-studio-gui"),
    ("/home/a b/venv/bin/python", '"/home/a b/venv/bin/python"'),
    ("/opt/100%/x", "/opt/100%%/x"),
    ('/x/"q"$`\\', '"/x/\\"q\\"\\$\\`\\\\"'),
])
def test_exec_arguments_are_quoted_as_the_spec_says(arg: str, expected: str) -> None:
    assert desktop.exec_argument(arg) == expected


@posix_only
@needs_validator
def test_the_desktop_entry_validates_and_points_at_the_program(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program = tmp_path / "my apps" / "SA3 100%" / "sa3-studio"
    monkeypatch.setattr(desktop, "launch_command", lambda: [str(program)])
    entry, icon, _ = desktop.install(tmp_path / "data")
    assert icon.read_bytes() == (REPO / "resources/icons/app.svg").read_bytes()
    text = entry.read_text()
    assert 'Exec="' + str(program).replace("%", "%%") + '"\n' in text
    assert f"TryExec={program}\n" in text and "Icon=sa3-studio\n" in text
    checked = subprocess.run([VALIDATE, str(entry)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # the shipped template is valid as it is (a pip install puts sa3-studio-gui on PATH)
    assert subprocess.run([VALIDATE, str(REPO / "resources/desktop/sa3-studio.desktop")],
                          capture_output=True).returncode == 0
    assert sorted(desktop.uninstall(tmp_path / "data")) == sorted([entry, icon])
    assert not entry.exists() and not icon.exists()
    assert desktop.uninstall(tmp_path / "data") == []


def test_install_desktop_says_why_it_cannot_write_and_changes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "applications").write_bytes(b"a file where the folder belongs")
    with pytest.raises(desktop.CommandFailed) as failed:
        desktop.install(data)
    text = str(failed.value)
    assert text.startswith("Could not add SA3 Studio to the menus") and "\n" not in text
    assert (data / "applications").read_bytes() == b"a file where the folder belongs"
    leftovers = [p for p in data.rglob("*") if p.name.endswith(".partial")]
    assert leftovers == []
