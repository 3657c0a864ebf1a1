"""The one-time pass that gives every take without a sound embedding one: takes kept before
embeddings existed, takes rebuilt from their audio files, takes embedded by an older recipe, and
takes embedded from audio alone once an encoder for their latent space is at hand.

A take's stored audio is read, its latents are taken from its codec's encoder when one is given
(the library keeps audio, not latents), and the embedding is kept in batches, each its own short
write transaction: a pass cut short keeps what it did, and the next one goes on from there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from engines.store.embeddings import audio_embedding
from engines.store.records import LibraryError

if TYPE_CHECKING:
    from engines.similarity.encoding import LatentEncoders
    from engines.store.library import ClipLibrary

log = logging.getLogger(__name__)

BATCH = 64  # takes per write transaction
EmbedProgress = Callable[[int, int], None]
"""progress(done, total) after every take; total is known before the first."""


def embed_missing(library: ClipLibrary, encoders: LatentEncoders | None = None,
                  progress: EmbedProgress | None = None) -> int:
    """Embed every take that needs it (see ClipLibrary.takes_to_embed); returns how many were
    embedded. A take whose audio is missing or unreadable is skipped (logged), never fatal:
    it is tried again by the next pass."""
    spaces = encoders.spaces if encoders is not None else []
    todo = library.takes_to_embed(spaces)
    done = 0
    kept = 0
    batch: list = []
    for take_id, space in todo:
        try:
            audio = library.load_float_audio(take_id)
        except LibraryError as err:
            log.info("Take #%d was not embedded: %s", take_id, err)
        else:
            latents = encoders.latents(space, audio) if encoders is not None and space else None
            batch.append((take_id, audio_embedding(audio, latents, space)))
        done += 1
        if len(batch) >= BATCH:
            kept += library.keep_embeddings(batch)
            batch = []
        if progress is not None:
            progress(done, len(todo))
    kept += library.keep_embeddings(batch)
    if todo:
        log.info("Embedded %d of %d takes for sound search", kept, len(todo))
    return kept
