"""Real recordings no one here made, grouped into families by their file names: the sound effects
that free games ship as Debian data packages (`bat-hit-1.ogg`, `bat-hit-2.ogg`, ... are one
family). What search by sound is measured on (bench/bench_sound_search.py) and tested on
(tests/engines/test_sound_search_real.py): a file's nearest neighbour should be a sibling.

A family is the files of one folder whose names differ only in a trailing number (`Farm1`,
`Farm2`; `horn-1`, `horn-2`); names without a number, music folders and families of one are left
out, and a sound kept in two formats (`mace.ogg`, `mace.wav`) counts once, as does a file shipped
twice with the same bytes (megaglest copies a unit's sounds into each faction that has it: a copy
would be a "sibling" found by its bytes, not by its sound).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Measured on: wesnoth's unit sounds (hit/die/miss families of a fantasy battle game),
# lincity-ng's building loops (a city builder) and megaglest's unit voices and effects (a
# real-time strategy game: ack/select/attack/die families of 100-odd units, 1,273 files);
# hedgewars' voice packs are the set any constant of the embedding was chosen on, so it is never
# the one a figure is claimed for.
EVALUATED = ("wesnoth-1.16-data", "lincity-ng-data", "megaglest-data")
TUNED_ON = "hedgewars-data"
_AUDIO = re.compile(r"\.(ogg|wav|flac)$", re.IGNORECASE)
_NUMBERED = re.compile(r"^(.*?\D)[-_ ]?(\d+)$")


@dataclass(frozen=True)
class SoundFile:
    path: Path
    family: str  # "<package>:<folder>/<name without its number>"
    package: str


def package_version(package: str) -> str | None:
    """The installed version of a Debian package, None when it is not installed."""
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}", package],
                              capture_output=True, text=True, check=False)
    except OSError:  # not a Debian system
        return None
    status, _, version = done.stdout.partition("\t")
    return version if done.returncode == 0 and status.endswith(" installed") else None


def package_files(package: str) -> list[Path]:
    done = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=False)
    return sorted(Path(line) for line in done.stdout.splitlines() if _AUDIO.search(line))


def families(package: str) -> list[SoundFile]:
    """The numbered sound families of an installed package (>= 2 members each), sorted."""
    members: dict[str, list[Path]] = defaultdict(list)
    seen: set[tuple[Path, str]] = set()
    contents: set[str] = set()
    for path in package_files(package):
        if "music" in (part.lower() for part in path.parts):
            continue
        match = _NUMBERED.match(path.stem)
        if match is None or (path.parent, path.stem) in seen or not path.is_file():
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest in contents:
            continue
        seen.add((path.parent, path.stem))
        contents.add(digest)
        name = match.group(1).rstrip("-_ ").lower()
        members[f"{package}:{path.parent.name}/{name}"].append(path)
    return [SoundFile(path, family, package) for family, paths in sorted(members.items())
            if len(paths) >= 2 for path in paths]


def family_labels(files: list[SoundFile]) -> np.ndarray:
    """An integer label per file, equal for siblings."""
    names = {name: index for index, name in enumerate(dict.fromkeys(f.family for f in files))}
    return np.array([names[f.family] for f in files])


def source_labels(files: list[SoundFile]) -> np.ndarray:
    """A looser grouping, for context only: the family name's first word (`orc-small-hit` and
    `orc-die` are both `orc`: one creature's voice, often one recording pitched or cut)."""
    def source(family: str) -> str:
        folder, _, name = family.rpartition("/")
        return f"{folder}/{re.split(r'[-_ ]', name)[0]}"
    names = {name: index for index, name in
             enumerate(dict.fromkeys(source(f.family) for f in files))}
    return np.array([names[source(f.family)] for f in files])


def nearest_sibling_rates(vectors: np.ndarray, labels: np.ndarray, k: int = 5
                          ) -> tuple[float, float]:
    """(top-1, precision@k) by cosine similarity: the share of files whose nearest other file
    is a sibling, and the mean share of siblings among each file's k nearest."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    order = np.argsort(-similarity, axis=1, kind="stable")[:, :k]
    same = labels[order] == labels[:, None]
    return float(same[:, 0].mean()), float(same.mean())


def random_expectation(labels: np.ndarray) -> float:
    """The expected top-1 (and precision@k) of a ranking that ignores the sound: a file's
    neighbour is a sibling with probability (family size - 1) / (files - 1)."""
    sizes = np.bincount(labels)[labels]
    return float(((sizes - 1) / (labels.size - 1)).mean())
