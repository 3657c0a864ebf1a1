"""`sa3-studio models gpu-runtime [--cuda 12|13] [--status | --remove]`: fetch TensorRT,
cuda-python and NVRTC into the data folder, for a bundle (or any install without the
`tensorrt` extra) on a machine with an NVIDIA card (engines.models.gpu_runtime).

Exit codes as for `models`: 0 done, 1 the fetch failed (nothing half-installed), 2 refused,
130 cancelled (the part downloaded so far is kept and resumed next time).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

from engines.cli.support import EXIT_OK, CommandFailed
from engines.cli.words import say
from engines.error_sentences import printable
from engines.errors import CancelledError
from engines.models import gpu_runtime as runtime
from engines.models.gpu_runtime_fetch import GpuRuntimeError, GpuRuntimeOfflineError, check_online
from engines.models.gpu_runtime_site import site_dir
from engines.models.inventory import human_size

PROGRESS_EVERY_S = 0.5


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gpu-runtime", help="fetch TensorRT and cuda-python into the data "
                                           "folder (for the bundle; about 2-3 GB)")
    p.add_argument("--cuda", choices=sorted(runtime.RUNTIME_REQUIREMENTS),
                   help="CUDA major to fetch for (default: what this driver supports)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--status", action="store_true", help="say what is fetched, change nothing")
    what.add_argument("--remove", action="store_true", help="delete the fetched runtime")


def _status() -> int:
    stamp = runtime.installed_runtime()
    folder = site_dir()
    if stamp is None:
        print(printable(f"No GPU runtime has been fetched (it would go to {folder})."))
        return EXIT_OK
    fits = "used at start" if stamp.fits_here() else \
        f"not used: fetched for {stamp.python} on {stamp.platform}; fetch it again"
    print(printable(f"GPU runtime for CUDA {stamp.cuda} in {folder} ({fits}):"))
    for name, version in stamp.distributions:
        print(printable(f"  {name} {version}"))  # read from a file in the data folder
    return EXIT_OK


class _Printer:
    """One updating line per file on a terminal; a line every few seconds otherwise."""

    def __init__(self) -> None:
        self._last = 0.0
        self._name = ""

    def __call__(self, name: str, done: int, total: int | None, number: int) -> None:
        now = time.monotonic()
        whole = total is not None and done >= total
        if name == self._name and not whole and now - self._last < PROGRESS_EVERY_S:
            return
        if name != self._name and self._name:
            print(flush=True)
        self._name, self._last = name, now
        of = f"{done * 100 // max(total, 1)}% of {human_size(total)}" if total else \
            human_size(done)
        print(f"\r[{number}] {printable(name)}: {of}", end="", flush=True)  # the index's name

    def finish(self) -> None:
        if self._name:
            print(flush=True)


def run(args: argparse.Namespace) -> int:
    if args.status:
        return _status()
    if args.remove:
        removed = runtime.remove_gpu_runtime()
        print("GPU runtime removed." if removed else "No GPU runtime was fetched; nothing to "
                                                    "remove.")
        return EXIT_OK
    cuda = runtime.choose_cuda(args.cuda, runtime.driver_cuda_major() if args.cuda is None
                               else None)
    check_online()  # a setting that blocks every download: refused (exit 2) before we start
    print(f"Fetching the GPU runtime for CUDA {cuda}: "
          f"{', '.join(runtime.RUNTIME_REQUIREMENTS[cuda])} and their dependencies.")
    cancel = threading.Event()
    printer = _Printer()
    try:
        stamp = runtime.fetch_gpu_runtime(cuda, printer, cancel)
    except KeyboardInterrupt:
        cancel.set()
        printer.finish()
        raise
    except CancelledError:
        printer.finish()
        raise
    except GpuRuntimeOfflineError:
        printer.finish()
        raise  # a setting to change: exit 2, as every refusal
    except GpuRuntimeError as exc:
        printer.finish()
        raise CommandFailed(say(exc)) from exc
    printer.finish()
    print(printable(f"GPU runtime ready in {site_dir()}: " + ", ".join(
        f"{n} {v}" for n, v in stamp.distributions) + "."), file=sys.stdout)
    return EXIT_OK
