"""Search by sound on real recordings no one here made (tests/sound_families.py): the unit sounds
of Battle for Wesnoth and MegaGlest and the building sounds of LinCity-NG, as Debian ships them.
A file's nearest other file should be one of its numbered siblings (`bat-hit-1` finds
`bat-hit-3`), far more often than a ranking that ignores the sound. The figures asserted are
those measured by bench/bench_sound_search.py (bench/results/sound-search-*.json), less a small
margin.

Skipped where the packages are not installed:
    apt-get install wesnoth-1.16-data lincity-ng-data megaglest-data
"""

from __future__ import annotations

import numpy as np
import pytest

from engines.audio_io import read_audio
from engines.similarity.index import EmbeddingIndex
from engines.store.embeddings import audio_embedding
from tests.sound_families import (
    families,
    family_labels,
    nearest_sibling_rates,
    package_version,
    random_expectation,
)

# (package, least top-1, least precision@5): measured 0.644 / 0.340, 0.151 / 0.077 and
# 0.688 / 0.435 (bench/results/sound-search-20261206.json).
# LinCity-NG's families are a building's several sounds (a farm's cows, tractor and wind, at
# 11, 22 or 44 kHz), so siblings there share a place more than a sound.
pytestmark = pytest.mark.slow  # decodes and embeds about 1,540 files: 8 s on 2 cores

FLOORS = [("wesnoth-1.16-data", 0.62, 0.32), ("lincity-ng-data", 0.12, 0.065),
          ("megaglest-data", 0.66, 0.41)]


def _sounds(package: str) -> tuple[list, np.ndarray]:
    if package_version(package) is None:
        pytest.skip(f"the Debian package {package} is not installed (apt-get install {package})")
    files = families(package)
    return files, family_labels(files)


@pytest.mark.parametrize(("package", "least_top1", "least_precision"), FLOORS)
def test_a_files_nearest_neighbour_is_a_sibling(package: str, least_top1: float,
                                                least_precision: float):
    files, labels = _sounds(package)
    # The library's own path: the embedding an imported file gets, and the index searches use.
    index = EmbeddingIndex()
    vectors = []
    for number, found in enumerate(files):
        space, vector = audio_embedding(read_audio(found.path))
        assert space == ""  # no latents: compared by its sound alone
        index.add(number, space, vector)
        vectors.append(vector)
    nearest = [index.nearest(vectors[n], "", 5, exclude=[n]) for n in range(len(files))]
    ranked = np.array([[labels[hit.take_id] for hit in hits] for hits in nearest])
    top1 = float((ranked[:, 0] == labels).mean())
    precision = float((ranked == labels[:, None]).mean())
    assert (top1, precision) == pytest.approx(nearest_sibling_rates(np.stack(vectors), labels),
                                              abs=0.02)
    chance = random_expectation(labels)
    assert chance < 0.03
    assert top1 >= least_top1 and top1 > 5 * chance, (package, top1, chance)
    assert precision >= least_precision, (package, precision)
