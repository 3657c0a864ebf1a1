"""On a machine with an NVIDIA GPU: does a GPU runtime unpacked into the data folder work the
way `models gpu-runtime` leaves it? (The download and verification are tested anywhere, in
tests/packaging/test_packaging_gpu_runtime.py; this needs the real cuda-python and NVRTC wheels
and a GPU.)

    python3 -S packaging/gpu_runtime_device_check.py WHEELS_FOLDER   (PYTHONPATH: repo, numpy,
                                                                      platformdirs, packaging)

Run with -S so no site-packages of the machine is on the path: whatever CUDA Python it has
installed cannot stand in for the runtime. The wheels are unpacked with the fetcher's own code
(gpu_runtime_unpack, runtime.json from gpu_runtime_site) into $SA3_STUDIO_HOME/gpu-runtime/site;
then fresh processes check that before activation nothing imports, and after it the GPU is
found through cuda.bindings from that folder, and NVRTC (loaded from that folder by path)
compiles a kernel for the GPU's arch. A last run leaves out the NVRTC preload, to show whether
it is needed. Prints one JSON object per step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.utils import parse_wheel_filename

from engines.models.gpu_runtime_site import site_dir, stamp_payload
from engines.models.gpu_runtime_unpack import unpack

PROBE = r"""
import json, site, sys
site.getsitepackages = lambda *a: []  # cuda-pathfinder must not find the machine's own wheels
site.ENABLE_USER_SITE = False
from engines.models import gpu_runtime_site as s
if sys.argv[1] == "no-preload":
    s._preload_nvrtc = lambda folder: None
report = {"step": sys.argv[1]}
if sys.argv[1] != "before":
    report["activated"] = str(s.activate_gpu_runtime())
try:
    import cuda.bindings
    report["cuda.bindings"] = cuda.bindings.__file__
    from engines.gpu import probe_gpu
    gpu = probe_gpu()
    report["gpu"] = None if gpu is None else [gpu.name, gpu.sm, gpu.driver]
    from engines.cuda.nvrtc import compile_cubin, nvrtc_version
    report["nvrtc_version"] = list(nvrtc_version())
    cubin = compile_cubin('extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }',
                          "k", gpu.sm if gpu else "sm_90")
    report["cubin_bytes"] = len(cubin)
except Exception as exc:  # noqa: BLE001 - the report says what failed
    report["error"] = f"{type(exc).__name__}: {exc}"
report["nvrtc_loaded_from"] = sorted({line.split()[-1] for line in open("/proc/self/maps")
                                      if "libnvrtc" in line})
print(json.dumps(report), flush=True)
"""


def main(wheels: Path) -> int:
    home = Path(tempfile.mkdtemp(prefix="sa3-gpu-runtime-"))
    root = home / "gpu-runtime"
    folder = site_dir(root)
    folder.mkdir(parents=True)
    versions = []
    for wheel in sorted(wheels.glob("*.whl")):
        name, version, _, _ = parse_wheel_filename(wheel.name)
        unpack(wheel, str(name), folder)
        versions.append((str(name), str(version)))
    (folder / "runtime.json").write_bytes(stamp_payload("12", versions))
    print(json.dumps({"step": "unpacked", "folder": str(folder), "distributions": versions}))
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    for step in ("before", "activated", "no-preload"):
        done = subprocess.run([sys.executable, "-S", "-c", PROBE, step], env=env,
                              capture_output=True, text=True, timeout=300)
        print(done.stdout.strip() or json.dumps({"step": step, "exit": done.returncode,
                                                 "stderr": done.stderr[-1500:]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
