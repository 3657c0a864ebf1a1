"""Schema step 9 (engines.team.migrations): each entry's sound embedding carries the recipe
version that made it (engines.similarity.embedding.EMBEDDING_VERSION), so "more like this"
compares only vectors of one recipe, and old vectors are brought up to date from the audio.

  - takes.embedding_version: the recipe of the entry's vector. Entries of older releases get
    1 ("old or unknown"), as does an entry without a vector, or one sent through step 5's
    sa3_publish (which cannot say a version): such entries are stale, never trusted as new.
  - sa3_publish_versioned(...): step 5's sa3_publish (its checks of the writer and the take)
    plus the version of the vector sent. A take the team has already keeps its vector unless
    that one is older than the vector sent (or missing): a republish brings a stale entry up
    to date, never overwrites a current one.
  - sa3_reembed(take, designer, vector, version): a writer's vector for an entry whose stored
    vector is missing or of an older version than `version`; false (nothing written) for an
    entry that is current already, or newer, or gone. Computed by `team reembed` from the
    entry's audio in the content store (engines.team.reembedding).

What the server cannot check: that a vector is the sound of its audio. Any writer can publish
a new take with any vector; these functions keep a writer from replacing a current vector,
and a vector a writer claims is of a future version only hides that entry from "more like
this" until that version's clients come.
"""

from __future__ import annotations

FIRST_VERSION = 1  # what entries of older releases, and vectors of no stated version, are
_SAFE = "SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"

_STEP = f"""
ALTER TABLE public.takes ADD COLUMN embedding_version integer NOT NULL
    DEFAULT {FIRST_VERSION} CHECK (embedding_version >= {FIRST_VERSION});
CREATE INDEX takes_embedding_version ON public.takes (embedding_version);

CREATE FUNCTION public.sa3_publish_versioned(p_key text, p_take jsonb, p_embedding text,
                                             p_embedding_version integer, p_designer text,
                                             p_files jsonb, p_stars integer, p_tags text[],
                                             p_note text, OUT team_id bigint,
                                             OUT is_new boolean)
LANGUAGE plpgsql {_SAFE} AS $$
BEGIN
    IF p_embedding IS NOT NULL AND coalesce(p_embedding_version, 0) < {FIRST_VERSION} THEN
        RAISE EXCEPTION 'a sound embedding comes with its recipe version, from {FIRST_VERSION}'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT p.team_id, p.is_new INTO team_id, is_new
    FROM public.sa3_publish(p_key, p_take, p_embedding, p_designer, p_files, p_stars, p_tags,
                            p_note) AS p;
    IF p_embedding IS NOT NULL THEN
        UPDATE public.takes t SET embedding = p_embedding::public.vector,
                                  embedding_version = p_embedding_version
        WHERE t.id = team_id
          AND (is_new OR t.embedding IS NULL OR t.embedding_version < p_embedding_version);
    END IF;
END $$;

CREATE FUNCTION public.sa3_reembed(p_take bigint, p_designer text, p_embedding text,
                                   p_version integer) RETURNS boolean
LANGUAGE plpgsql {_SAFE} AS $$
DECLARE who text := public.sa3_writer(p_designer);
BEGIN
    IF p_embedding IS NULL OR coalesce(p_version, 0) <= {FIRST_VERSION} THEN
        RAISE EXCEPTION 'a new sound embedding is of a recipe after version {FIRST_VERSION}'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE public.takes t SET embedding = p_embedding::public.vector,
                              embedding_version = p_version
    WHERE t.id = p_take AND (t.embedding IS NULL OR t.embedding_version < p_version);
    IF FOUND THEN
        RAISE LOG 'sa3: % gave team take % a sound embedding of version %', who, p_take,
            p_version;
    END IF;
    RETURN FOUND;
END $$;
"""


def step_sql() -> str:
    """Schema step 9: the embedding's version, the versioned publish and sa3_reembed."""
    return _STEP
