"""The GPU runtime fetch (engines.models.gpu_runtime) against local package indexes: two
indexes like PyPI and NVIDIA's (one PEP 503 HTML, one PEP 691 JSON), small fake wheels and the
TensorRT sdist, served by http.server. What a user cares about: the pinned versions and their
dependencies arrive, verified, with progress; a file that does not match its sha256 is refused
in one sentence and nothing is left half-written; an interrupted download resumes; the
fetched runtime is what `import tensorrt` finds at the next start."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag

from engines.models import gpu_runtime
from engines.models.gpu_runtime_fetch import GpuRuntimeCancelledError, GpuRuntimeError
from engines.models.gpu_runtime_index import INDEX_ENV, IndexFile, best_file
from engines.models.gpu_runtime_site import read_stamp, site_dir
from engines.models.gpu_runtime_unpack import unpack_wheel
from tests.fake_package_index import FakeIndex, FakeIndexServer, make_sdist, make_wheel

REPO = Path(__file__).resolve().parents[2]
TRT = "10.15.1.29"
ANY = "py3-none-any"
BIG = os.urandom(3 << 20)  # the "libraries": large enough for several progress calls

EXPECTED = {  # what the CUDA 12 runtime resolves to on the fake indexes
    "tensorrt-cu12": TRT, "tensorrt-cu12-libs": TRT, "tensorrt-cu12-bindings": TRT,
    "cuda-python": "12.9.10", "cuda-bindings": "12.9.10", "cuda-pathfinder": "1.9.1",
    "nvidia-cuda-nvrtc-cu12": "12.9.86", "nvidia-ml-py": "13.615.71",
}


def _build(root: Path) -> tuple[FakeIndex, FakeIndex]:
    """'pypi' (HTML pages) and 'nvidia' (JSON pages), as the real ones split the files."""
    work = root / "build"
    work.mkdir(parents=True)
    pypi, nvidia = FakeIndex(root, "pypi"), FakeIndex(root, "nvidia", pages="json")
    pypi.add("tensorrt-cu12", make_sdist(work, "tensorrt_cu12", TRT, {
        "tensorrt/__init__.py": b"from tensorrt_bindings import *\n"
                                b"from tensorrt_bindings import __version__\n",
        "setup.py": b"raise SystemExit('never run')\n"},
        requires=[f"tensorrt_cu12_libs=={TRT}", f"tensorrt_cu12_bindings=={TRT}",
                  'numpy; extra == "numpy"']))
    pypi.add("tensorrt-cu12-bindings", make_wheel(work, "tensorrt_cu12_bindings", TRT, ANY, {
        "tensorrt_bindings/__init__.py": b"import tensorrt_libs\n__version__ = '10.15.1.29'\n"
                                         b"class Logger:\n    WARNING = 2\n"}))
    # PyPI holds only a stub sdist of the libraries; the wheel is on NVIDIA's index
    pypi.add("tensorrt-cu12-libs", make_sdist(work, "tensorrt_cu12_libs", TRT, {
        "setup.py": b"raise SystemExit('a stub')\n"}))
    nvidia.add("tensorrt-cu12-libs", make_wheel(work, "tensorrt_cu12_libs", TRT, ANY, {
        "tensorrt_libs/__init__.py": b"", "tensorrt_libs/libnvinfer.so.10": BIG}))
    nvidia.add("tensorrt-cu12-libs", make_wheel(work, "tensorrt_cu12_libs", "10.16.0.1", ANY,
                                                {"tensorrt_libs/__init__.py": b"# newer\n"}))
    for version, bindings in (("12.9.10", "cuda-bindings~=12.9.10"),
                              ("13.0.1", "cuda-bindings~=13.0.1")):
        pypi.add("cuda-python", make_wheel(work, "cuda_python", version, ANY, {},
                                           requires=[bindings]))
    pypi.add("cuda-bindings", make_wheel(work, "cuda_bindings", "12.9.10", ANY, {
        "cuda/bindings/__init__.py": b"__version__ = '12.9.10'\n",
        "cuda_bindings-12.9.10.data/scripts/tool": b"#!/bin/sh\n"},
        requires=["cuda-pathfinder~=1.1", 'nvidia-cuda-nvcc-cu12; extra == "all"']))
    pypi.add("cuda-bindings", make_wheel(work, "cuda_bindings", "12.9.11", "cp27-cp27m-win32",
                                         {"cuda/bindings/__init__.py": b""}))  # not for here
    pypi.add("cuda-pathfinder", make_wheel(work, "cuda_pathfinder", "1.9.1", ANY, {
        "cuda/pathfinder/__init__.py": b""}))
    pypi.add("nvidia-cuda-nvrtc-cu12", make_wheel(work, "nvidia_cuda_nvrtc_cu12", "12.9.86",
                                                  ANY, {"nvidia/cuda_nvrtc/lib/x.txt": b"x"}))
    pypi.add("nvidia-ml-py", make_wheel(work, "nvidia_ml_py", "13.615.71", ANY, {
        "pynvml.py": b"def nvmlInit():\n    pass\n"}))
    pypi.write_pages()
    nvidia.write_pages()
    return pypi, nvidia


@pytest.fixture
def indexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pypi, nvidia = _build(tmp_path / "indexes")
    server = FakeIndexServer(tmp_path / "indexes", json_indexes={"nvidia"})
    monkeypatch.setenv(INDEX_ENV, f"{pypi.url(server)} {nvidia.url(server)}")
    monkeypatch.setenv("SA3_STUDIO_HUB_TIMEOUT", "5")
    # The fakes carry real names: one this environment happens to have (the GPU machine has
    # cuda-pathfinder) must still be fetched, as on a bundle user's machine.
    already_here = gpu_runtime._already_here
    monkeypatch.setattr(gpu_runtime, "_already_here",
                        lambda name, spec: name not in EXPECTED and already_here(name, spec))
    yield pypi, nvidia, server
    server.close()


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None, int]] = []

    def __call__(self, name: str, done: int, total: int | None, number: int) -> None:
        self.calls.append((name, done, total, number))


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*")
                  if p.name.startswith((".staging-", ".old-")) or p.name.endswith(".part"))


def test_the_pins_are_the_ones_in_pyproject_extras() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert set(gpu_runtime.RUNTIME_REQUIREMENTS["12"]) == set(extras["tensorrt"])
    assert set(gpu_runtime.RUNTIME_REQUIREMENTS["13"]) == set(extras["tensorrt-cu13"])


def test_fetch_resolves_verifies_and_unpacks_with_progress(indexes, tmp_path: Path) -> None:
    root = tmp_path / "data" / "gpu-runtime"
    progress = Recorder()
    stamp = gpu_runtime.fetch_gpu_runtime("12", progress, threading.Event(), root=root)

    assert dict(stamp.distributions) == EXPECTED
    site = site_dir(root)
    assert (site / "tensorrt" / "__init__.py").is_file()
    assert not (site / "setup.py").exists() and not (site / "tool").exists()
    assert (site / "tensorrt_libs" / "libnvinfer.so.10").read_bytes() == BIG
    assert list(site.glob("tensorrt_cu12-10.15.1.29.dist-info/METADATA"))
    # every file reported to its end, bytes never going backwards, numbered in order
    names = {}
    for name, done, _total, number in progress.calls:
        assert done >= names.get(name, (0, 0))[0]
        names[name] = (done, number)
    assert len(names) == len(EXPECTED)
    assert sorted(n for _, n in names.values()) == list(range(1, len(EXPECTED) + 1))
    libs = [c for c in progress.calls if c[0].startswith("tensorrt_cu12_libs")]
    assert len(libs) >= 3 and libs[-1][1] == libs[-1][2] == len(
        next((root.parent.parent / "indexes" / "nvidia" / "files").glob(
            f"tensorrt_cu12_libs-{TRT}-*")).read_bytes())
    # the downloads are gone once unpacked; nothing half-made is left
    assert list((root / "downloads").iterdir()) == []
    assert _leftovers(root) == []


@pytest.mark.slow  # the next start is a real process
def test_the_fetched_runtime_is_what_the_next_start_imports(indexes, tmp_path: Path) -> None:
    home = tmp_path / "home"
    gpu_runtime.fetch_gpu_runtime("12", Recorder(), threading.Event(),
                                  root=home / "gpu-runtime")
    probe = ("import sys; from engines.models.gpu_runtime_site import activate_gpu_runtime; "
             "from engines.gpu import tensorrt_version; site = activate_gpu_runtime(); "
             "import tensorrt, pynvml; "
             "print(tensorrt.__version__, tensorrt.Logger.WARNING, tensorrt_version(), "
             "str(site) in sys.path, tensorrt.__file__.startswith(str(site)))")
    env = {**os.environ, "SA3_STUDIO_HOME": str(home),
           "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO),
                                                       os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [TRT, "2", TRT, "True", "True"]
    # another Python's runtime is left alone rather than half-imported
    stamp_file = site_dir(home / "gpu-runtime") / "runtime.json"
    stamp_file.write_text(stamp_file.read_text().replace('"cpython-', '"otherpython-'))
    done = subprocess.run([sys.executable, "-c", "from engines.models.gpu_runtime_site import "
                           "activate_gpu_runtime as a; print(a())"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "None"


def test_a_file_that_does_not_match_its_sha256_is_refused_and_nothing_changes(
        indexes, tmp_path: Path) -> None:
    pypi, nvidia, _server = indexes
    root = tmp_path / "gpu-runtime"
    before = gpu_runtime.fetch_gpu_runtime("12", Recorder(), threading.Event(), root=root)
    marker = site_dir(root) / "tensorrt" / "__init__.py"
    kept = marker.read_bytes()

    nvidia.wrong_hash.add(f"tensorrt_cu12_libs-{TRT}-{ANY}.whl")
    nvidia.write_pages()
    with pytest.raises(GpuRuntimeError) as refused:
        gpu_runtime.fetch_gpu_runtime("12", Recorder(), threading.Event(), root=root)
    text = str(refused.value)
    assert "sha256" in text and f"tensorrt_cu12_libs-{TRT}" in text
    assert "\n" not in text and text.endswith(".")
    # the runtime from before is whole and unchanged; no part, no staging, no bad file
    assert read_stamp(site_dir(root)) == before and marker.read_bytes() == kept
    assert _leftovers(root) == []
    assert not list((root / "downloads").glob("tensorrt_cu12_libs*"))


def test_an_interrupted_download_resumes_with_a_range_request(indexes, tmp_path: Path) -> None:
    _pypi, nvidia, server = indexes
    root = tmp_path / "gpu-runtime"
    wheel = next((nvidia.folder / "files").glob(f"tensorrt_cu12_libs-{TRT}-*"))
    half = len(wheel.read_bytes()) // 2
    (root / "downloads").mkdir(parents=True)
    (root / "downloads" / (wheel.name + ".part")).write_bytes(wheel.read_bytes()[:half])

    gpu_runtime.fetch_gpu_runtime("12", Recorder(), threading.Event(), root=root)
    ranges = [h.get("Range") for path, h in server.requests if path.endswith(wheel.name)]
    assert ranges == [f"bytes={half}-"]
    assert (site_dir(root) / "tensorrt_libs" / "libnvinfer.so.10").read_bytes() == BIG


def test_cancel_keeps_the_part_and_installs_nothing(indexes, tmp_path: Path) -> None:
    root = tmp_path / "gpu-runtime"
    cancel = threading.Event()

    def progress(name: str, done: int, total: int | None, number: int) -> None:
        if name.startswith("tensorrt_cu12_libs") and done >= 1 << 20:
            cancel.set()

    with pytest.raises(GpuRuntimeCancelledError):
        gpu_runtime.fetch_gpu_runtime("12", progress, cancel, root=root)
    assert not site_dir(root).exists()
    parts = list((root / "downloads").glob("*.part"))
    assert [p.name.split("-")[0] for p in parts] == ["tensorrt_cu12_libs"]


@pytest.mark.slow  # the command in real processes: its start imports the runtime
def test_the_command_fetches_reports_and_removes(indexes, tmp_path: Path) -> None:
    pypi, _nvidia, _server = indexes
    env = {**os.environ, "SA3_STUDIO_HOME": str(tmp_path / "home")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(REPO / "main.py"), "models", "gpu-runtime",
                               *args], env=env, capture_output=True, text=True, timeout=120)

    fetched = run("--cuda", "12")
    assert fetched.returncode == 0, fetched.stderr
    assert "GPU runtime ready" in fetched.stdout and "tensorrt_cu12_libs" in fetched.stdout
    status = run("--status")
    assert status.returncode == 0 and "cuda-bindings 12.9.10" in status.stdout
    assert "used at start" in status.stdout

    pypi.wrong_hash.add("nvidia_ml_py-13.615.71-py3-none-any.whl")
    pypi.write_pages()
    assert run("--remove").returncode == 0
    failed = run("--cuda", "12")
    assert failed.returncode == 1
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "sha256" in lines[0]
    assert "Traceback" not in failed.stderr
    assert "`python main.py models gpu-runtime`" in lines[0]


def test_without_a_driver_the_command_asks_for_the_cuda_version() -> None:
    with pytest.raises(GpuRuntimeError) as refused:
        gpu_runtime.choose_cuda(None, None)
    from engines.cli.words import say

    assert "--cuda 12 or 13" in say(refused.value)
    assert gpu_runtime.choose_cuda(None, 13) == "13"
    assert gpu_runtime.choose_cuda(None, 12) == "12"
    assert gpu_runtime.choose_cuda("12", 13) == "12"


def test_a_wheel_member_outside_the_folder_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "evil", "1.0", ANY, {"../escape.py": b"x = 1\n"})
    with pytest.raises(GpuRuntimeError, match="outside the runtime folder"):
        unpack_wheel(wheel, tmp_path / "site")
    assert not (tmp_path / "escape.py").exists()


def test_the_newest_fitting_wheel_wins_and_yanked_or_foreign_files_do_not() -> None:
    here = Tag("py3", "none", "any")
    ranks = {Tag("cp311", "cp311", "linux_x86_64"): 0, here: 1}

    def file(version: str, tag: Tag | None, yanked: bool = False) -> IndexFile:
        from packaging.version import Version

        return IndexFile("x", f"x-{version}-{tag}.whl", "u", Version(version), "0" * 64, None,
                         yanked,
                         None, frozenset({tag}) if tag else frozenset())

    files = [file("1.0", here), file("1.2", here, yanked=True), file("1.1", here),
             file("2.0", Tag("cp27", "cp27m", "win32")), file("1.5rc1", here),
             file("1.1", Tag("cp311", "cp311", "linux_x86_64"))]
    best = best_file(files, SpecifierSet(">=1"), ranks)
    assert best is not None and str(best.version) == "1.1" and "linux_x86_64" in str(
        next(iter(best.tags)))
    assert str(best_file(files, SpecifierSet("==1.2"), ranks).version) == "1.2"
    assert best_file(files, SpecifierSet(">=3"), ranks) is None
    assert Requirement("a>=1").specifier  # packaging is importable where the app runs


def test_sha256_fragment_and_json_hashes_are_read_alike(indexes) -> None:
    from engines.models.gpu_runtime_fetch import project_files, session

    pypi, nvidia, server = indexes
    libs_html = project_files(session(), pypi.url(server), "tensorrt-cu12-libs")
    libs_json = project_files(session(), nvidia.url(server), "tensorrt-cu12-libs")
    assert [f.filename for f in libs_html] == [f"tensorrt_cu12_libs-{TRT}.tar.gz"]
    wheel = next((nvidia.folder / "files").glob(f"tensorrt_cu12_libs-{TRT}-*"))
    found = {f.filename: f.sha256 for f in libs_json}
    assert found[wheel.name] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    with zipfile.ZipFile(wheel) as z:
        assert "tensorrt_libs/libnvinfer.so.10" in z.namelist()
