"""Search by sound on real recordings no one here made: the sound effects free games ship in
Debian packages, in families by file name (tests/sound_families.py). For every file, its nearest
other file by each embedding: top-1 (the share whose nearest is a sibling) and precision@5 (the
mean share of siblings among the 5 nearest), beside a random ranking (exact expectation and a
seeded shuffle), the previous recipe's audio part (version 1, read from git) and this one's.

    apt-get install wesnoth-1.16-data lincity-ng-data hedgewars-data
    python bench/bench_sound_search.py [--aisfx WHEEL_OR_CHECKPOINT] [--fit-scale] [--no-record]

Figures are claimed for wesnoth and lincity-ng; hedgewars is the tuning set (feature scale and
block weights were chosen on it) and is printed marked as such. --aisfx also measures the aisfx
CNN (bench/aisfx_numpy.py), standardised by its hedgewars mean and spread, alone and beside ours.
--fit-scale writes engines/similarity/feature_scale.py from the tuning set.
Results go to bench/results/sound-search-YYYYMMDD.json unless --no-record.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engines.audio_io import read_audio  # noqa: E402
from engines.constants import SAMPLE_RATE  # noqa: E402
from engines.similarity.audio_features import raw_audio_features  # noqa: E402
from engines.similarity.embedding import EMBEDDING_VERSION, take_embedding  # noqa: E402
from tests.sound_families import (  # noqa: E402
    EVALUATED,
    TUNED_ON,
    families,
    family_labels,
    nearest_sibling_rates,
    package_version,
    random_expectation,
    source_labels,
)

RESULTS = ROOT / "bench" / "results"
VERSION_1 = "c37c023"  # the last commit with the version 1 audio features
SCALE_MODULE = ROOT / "engines" / "similarity" / "feature_scale.py"


def version_1_features():
    """The version 1 audio_features function, from git (None when git cannot show it)."""
    done = subprocess.run(["git", "show", f"{VERSION_1}:engines/similarity/audio_features.py"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    module = types.ModuleType("audio_features_v1")
    exec(compile(done.stdout, "audio_features_v1", "exec"), module.__dict__)  # noqa: S102
    return module.audio_features


def load_sets(packages: list[str], say) -> dict:
    sets = {}
    for package in packages:
        version = package_version(package)
        if version is None:
            say(f"{package}: not installed, left out")
            continue
        files = families(package)
        audio = [read_audio(f.path) for f in files]
        sets[package] = {"version": version, "files": files, "labels": family_labels(files),
                         "sources": source_labels(files), "audio": audio}
        say(f"{package} {version}: {len(files)} files in {sets[package]['labels'].max() + 1} "
            f"families, median {np.median([a.shape[0] for a in audio]) / SAMPLE_RATE:.2f} s")
    return sets


def timed(embed, audio: list[np.ndarray]) -> tuple[np.ndarray, float]:
    """The vectors and the CPU milliseconds per file (all threads: a busy machine's wall time
    says more about its neighbours than about the embedding)."""
    started = time.process_time()
    vectors = np.stack([embed(a) for a in audio])
    return vectors, 1000.0 * (time.process_time() - started) / len(audio)


def write_scale(tuning: dict, say) -> None:
    raw = np.stack([raw_audio_features(a, SAMPLE_RATE) for a in tuning["audio"]])
    mean, spread = raw.mean(axis=0), raw.std(axis=0) + 1e-6

    def listed(values: np.ndarray) -> str:
        numbers = [f"{v:.5g}" for v in values]
        lines, line = [], "    "
        for number in numbers:
            if len(line) + len(number) + 2 > 99:
                lines.append(line.rstrip())
                line = "    "
            line += number + ", "
        return "\n".join([*lines, line.rstrip()])

    SCALE_MODULE.write_text(
        '"""The fixed centre and spread of each raw audio feature (engines.similarity.'
        'audio_features),\nfitted on hedgewars\' voice packs (hedgewars-data '
        f'{tuning["version"]}, {raw.shape[0]} files) by\n`python bench/bench_sound_search.py '
        '--fit-scale`: never on the recordings search is measured on.\nChanging them changes '
        'every stored vector: bump EMBEDDING_VERSION with them."""\n\n'
        "import numpy as np\n\n"
        f"FEATURE_MEAN = np.array([\n{listed(mean)}\n])\n"
        f"FEATURE_SPREAD = np.array([\n{listed(spread)}\n])\n")
    say(f"wrote {SCALE_MODULE.relative_to(ROOT)}")


def measure(sets: dict, aisfx: str | None, say) -> dict:
    methods = {"audio features v1 (before)": version_1_features(),
               f"audio features v{EMBEDDING_VERSION} (audio part alone)":
                   lambda a: raw_and_scaled(a)}
    methods = {name: fn for name, fn in methods.items() if fn is not None}
    report: dict = {}
    net = None
    if aisfx:
        sys.path.insert(0, str(ROOT / "bench"))
        import aisfx_numpy
        net = aisfx_numpy.EmbeddingNet(aisfx_numpy.load(aisfx)[0])
    vectors: dict = {}
    for package, data in sets.items():
        labels = data["labels"]
        rng = np.random.default_rng(0)
        shuffled = [nearest_sibling_rates(rng.standard_normal((labels.size, 8)), labels)
                    for _ in range(20)]
        figures = {"random (expected)": {"top1": random_expectation(labels),
                                         "precision_at_5": random_expectation(labels)},
                   "random (seeded, mean of 20)": {
                       "top1": float(np.mean([s[0] for s in shuffled])),
                       "precision_at_5": float(np.mean([s[1] for s in shuffled]))}}
        for name, embed in methods.items():
            if name.startswith("audio features v1"):
                found, ms = timed(lambda a, fn=embed: fn(a, SAMPLE_RATE), data["audio"])
            else:
                found, ms = timed(embed, data["audio"])
            top1, p5 = nearest_sibling_rates(found, labels)
            same_source = nearest_sibling_rates(found, data["sources"])[0]
            figures[name] = {"top1": top1, "precision_at_5": p5, "cpu_ms_per_file": ms,
                             "top1_same_source": same_source}
            vectors[(package, name)] = found
        if net is not None:
            found, ms = timed(lambda a: aisfx_numpy.embed(net, a), data["audio"])
            vectors[(package, "aisfx")] = found
            figures["aisfx"] = {"cpu_ms_per_file": ms}
        report[package] = {"version": data["version"], "files": int(labels.size),
                           "families": int(labels.max() + 1), "tuning_set": package == TUNED_ON,
                           "sources": int(data["sources"].max() + 1), "figures": figures}
    if net is not None and TUNED_ON in sets:
        ours = f"audio features v{EMBEDDING_VERSION} (audio part alone)"
        tuning = vectors[(TUNED_ON, "aisfx")]
        centre, spread = tuning.mean(axis=0), tuning.std(axis=0) + 1e-3
        for package, data in sets.items():
            cnn = (vectors[(package, "aisfx")] - centre) / spread
            cnn /= np.linalg.norm(cnn, axis=1, keepdims=True)
            mine = vectors[(package, ours)]
            mine = mine / np.linalg.norm(mine, axis=1, keepdims=True)
            entry = report[package]["figures"]
            top1, p5 = nearest_sibling_rates(cnn, data["labels"])
            entry["aisfx"].update(top1=top1, precision_at_5=p5, top1_same_source=(
                nearest_sibling_rates(cnn, data["sources"])[0]))
            both = np.concatenate([np.sqrt(0.5) * mine, np.sqrt(0.5) * cnn], axis=1)
            top1, p5 = nearest_sibling_rates(both, data["labels"])
            entry[f"aisfx + audio features v{EMBEDDING_VERSION}, half each"] = {
                "top1": top1, "precision_at_5": p5}
    for package, entry in report.items():
        say(f"\n{package} ({entry['files']} files, {entry['families']} families)"
            + ("  [tuning set]" if entry["tuning_set"] else ""))
        for name, fig in entry["figures"].items():
            cost = (f"  {fig['cpu_ms_per_file']:.1f} CPU ms/file" if "cpu_ms_per_file" in fig
                    else "")
            source = (f"  (same source {fig['top1_same_source']:.3f})"
                      if "top1_same_source" in fig else "")
            say(f"  {name:44s} top-1 {fig.get('top1', float('nan')):.3f}  "
                f"p@5 {fig.get('precision_at_5', float('nan')):.3f}{cost}{source}")
    return report


def raw_and_scaled(audio: np.ndarray) -> np.ndarray:
    """The embedding search uses for a file without latents: the audio part alone."""
    return take_embedding(audio, SAMPLE_RATE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aisfx", help="the aisfx wheel or its models/checkpoint.pth")
    parser.add_argument("--fit-scale", action="store_true")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    sets = load_sets([*EVALUATED, TUNED_ON], print)
    if not sets:
        print("None of the sound packages is installed; see the docstring.")
        return 1
    if args.fit_scale:
        write_scale(sets[TUNED_ON], print)
        return 0
    report = {"date": dt.date.today().isoformat(), "embedding_version": EMBEDDING_VERSION,
              "method": "nearest other file by cosine within one package; families of >= 2 "
                        "numbered files (tests/sound_families.py)",
              "same_source": "top1_same_source, for context only: the nearest file shares the "
                             "first word of the family name (orc-small-hit ~ orc-die)",
              "aisfx": (None if not args.aisfx else
                        {"source": Path(args.aisfx).name, "licence": "CC BY 4.0 (weights)",
                         "weights_mb_float32": 18.7, "adopted": False}),
              "packages": measure(sets, args.aisfx, print)}
    if not args.no_record:
        RESULTS.mkdir(exist_ok=True)
        out = RESULTS / f"sound-search-{dt.date.today():%Y%m%d}.json"
        out.write_text(json.dumps(report, indent=2))
        print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
