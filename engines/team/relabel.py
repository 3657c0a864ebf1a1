"""Schema step 7 (engines.team.migrations): the designer who first published a take may give
its entry new delivered files and labels (a take relabelled since: engines.team.republish);
nobody else may, whatever SQL they send.

sa3_relabel(key, designer, labels, files), in the caller's transaction:
  - refuses (insufficient_privilege) a writer who is not the take's first publisher (the
    `designer` of its row, compared as the server compares designer names: without case);
  - replaces the entry's rows of each role `files` names (an audio role with its '-sidecar')
    by `files`, keeping the rows of the roles it does not name (a batch's own file, a finished
    file the take no longer has): nothing published is dropped by a relabel;
  - sets the labels in the take's provenance (provenance.library.labels, where the local
    library's sidecar keeps them), and tells watchers on the changed-takes channel;
  - returns false when there is no such take, or when the rows would stay the same.

Only rows change: the store's files are never touched by the server, so the old ones stay in
the store (content-addressed, never modified) and a copy fetched before still matches its hash.
The new files' names pass step 6's bounds like any file name (its trigger checks each insert).
"""

from __future__ import annotations

MAX_FILES = 16  # a take delivers at most 3 audio files and a sidecar each
MAX_LABELS_BYTES = 10_000  # six labels of at most 256 characters (engines.store.records)
_SAFE = "SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"
_FILES = ("jsonb_to_recordset(p_files) AS f (role text, name text, sha256 text, size bigint, "
          "format text)")


def step_sql(changed_channel: str) -> str:
    """Schema step 7: sa3_relabel; `changed_channel` is where watchers hear of changed takes
    (engines.team.migrations.CHANGED_TAKES_CHANNEL)."""
    return f"""
CREATE FUNCTION public.sa3_relabel(p_key text, p_designer text, p_labels jsonb, p_files jsonb)
RETURNS boolean LANGUAGE plpgsql {_SAFE} AS $$
DECLARE
    who text := public.sa3_writer(p_designer);
    v_take bigint;
    v_first text;
    v_roles text[];
BEGIN
    SELECT t.id, t.designer INTO v_take, v_first FROM public.takes t WHERE t.take_key = p_key
        FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF lower(v_first) <> lower(who) THEN
        RAISE EXCEPTION 'team take % keeps the files and labels of %, who published it first',
            v_take, v_first USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF jsonb_typeof(p_files) IS DISTINCT FROM 'array'
       OR jsonb_array_length(p_files) NOT BETWEEN 1 AND {MAX_FILES} THEN
        RAISE EXCEPTION 'a take is relabelled with 1 to {MAX_FILES} files'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_labels IS NOT NULL AND (jsonb_typeof(p_labels) <> 'object'
                                 OR octet_length(p_labels::text) > {MAX_LABELS_BYTES}) THEN
        RAISE EXCEPTION 'a take''s labels are one object of at most {MAX_LABELS_BYTES} bytes'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT array_agg(DISTINCT regexp_replace(f.role, '-sidecar$', '')) INTO v_roles
        FROM {_FILES};
    IF NOT EXISTS (
        (SELECT f.role, f.name, f.sha256 FROM {_FILES}
         EXCEPT
         SELECT c.role, c.file_name, c.sha256 FROM public.take_files c
         WHERE c.take_id = v_take)
        UNION ALL
        (SELECT c.role, c.file_name, c.sha256 FROM public.take_files c
         WHERE c.take_id = v_take AND regexp_replace(c.role, '-sidecar$', '') = ANY (v_roles)
         EXCEPT
         SELECT f.role, f.name, f.sha256 FROM {_FILES})) THEN
        RETURN false;
    END IF;
    DELETE FROM public.take_files c
        WHERE c.take_id = v_take AND regexp_replace(c.role, '-sidecar$', '') = ANY (v_roles);
    INSERT INTO public.take_files (take_id, role, file_name, sha256, size, format)
    SELECT v_take, f.role, f.name, f.sha256, f.size, coalesce(f.format, '')
    FROM {_FILES}
    ON CONFLICT DO NOTHING;
    UPDATE public.takes t SET provenance =
        (CASE WHEN jsonb_typeof(t.provenance) = 'object' THEN t.provenance
              ELSE '{{}}'::jsonb END)
        || jsonb_build_object('library',
               (CASE WHEN jsonb_typeof(t.provenance->'library') = 'object'
                     THEN t.provenance->'library' ELSE '{{}}'::jsonb END)
               || jsonb_build_object('labels', p_labels))
    WHERE t.id = v_take;
    PERFORM pg_notify('{changed_channel}', v_take::text);
    RETURN true;
END $$;
"""
