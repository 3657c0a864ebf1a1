"""Search by sound ("more like this"): a take's sound embedding, its stored form and the index.

    embedding       EMBEDDING_DIM, take_embedding(): latent features + audio features, unit norm
    audio_features  the model-independent part (log-mel shape, steadiness and motion, loudness
                    contour, length), standardised by feature_scale's fixed constants
    stored          the compact float16 form a library keeps
    index           EmbeddingIndex: brute-force nearest neighbours over every kept embedding
    encoding        LatentEncoders: the codec encoders that give latents to audio without them

This package is the pure part: it never imports the library. The library keeps embeddings beside
its takes (engines.store.embeddings), fills in the missing ones (engines.store.embedding_backfill:
embed_missing) and answers searches (engines.store.sound_search: similar_takes, similar_to_file,
similar_to_audio, what front ends call).
"""
