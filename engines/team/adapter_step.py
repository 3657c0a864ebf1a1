"""Schema step 8 (engines.team.migrations): adapter files shared with their takes.

A take made with LoRA/DoRA adapters names them in its provenance (request.adapters: file name,
SHA-256, variant, rank, strength) and brings each file as a take file of role 'adapter'
(engines.team.adapter_files). The server holds the two together, whoever writes:

  - a take whose provenance names adapters must bring every one of their files (checked when
    its publish commits: the files are added after the take, in the same transaction), so no
    take reaches the team without the sound that made it;
  - an adapter file a take brings must be one its provenance names, and is entered in the
    team's adapter catalogue (`adapters`: one row per file content, with who first shared it
    and the take it came with), which only these triggers write.
"""

from __future__ import annotations

REFUSED_ADAPTER = "SA302"  # SQLSTATE: an adapter file its take does not name
MISSING_ADAPTER = "SA303"  # SQLSTATE: a take that names adapters it does not bring

_SAFE = "SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"
# The adapters a take's provenance names; [] for a take without (or with damaged) ones.
_NAMED = ("(CASE WHEN jsonb_typeof({p}->'request'->'adapters') = 'array' "
          "THEN {p}->'request'->'adapters' ELSE '[]'::jsonb END)")

_STEP = f"""
CREATE TABLE public.adapters (
    sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{{64}}$'),
    file_name text NOT NULL,
    variant text NOT NULL DEFAULT '',
    rank integer NOT NULL DEFAULT 0 CHECK (rank >= 0),
    size bigint NOT NULL CHECK (size >= 0),
    designer text NOT NULL,
    first_take bigint REFERENCES public.takes (id) ON DELETE SET NULL,
    added timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX take_files_adapters ON public.take_files (sha256) WHERE role = 'adapter';

CREATE FUNCTION public.sa3_adapter_file() RETURNS trigger LANGUAGE plpgsql {_SAFE} AS $$
DECLARE
    named jsonb;
    maker text;
BEGIN
    IF NEW.role <> 'adapter' THEN
        RETURN NULL;
    END IF;
    SELECT a, t.designer INTO named, maker
    FROM public.takes t, jsonb_array_elements({_NAMED.format(p="t.provenance")}) AS a
    WHERE t.id = NEW.take_id AND a->>'sha256' = NEW.sha256
    LIMIT 1;
    IF named IS NULL THEN
        RAISE EXCEPTION 'the adapter file % is not one its take was made with', NEW.file_name
            USING ERRCODE = '{REFUSED_ADAPTER}';
    END IF;
    INSERT INTO public.adapters (sha256, file_name, variant, rank, size, designer, first_take)
    VALUES (NEW.sha256, NEW.file_name, coalesce(named->>'variant', ''),
            greatest(coalesce((named->>'rank')::integer, 0), 0), NEW.size, maker, NEW.take_id)
    ON CONFLICT (sha256) DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER take_files_adapter AFTER INSERT ON public.take_files
    FOR EACH ROW EXECUTE FUNCTION public.sa3_adapter_file();

CREATE FUNCTION public.sa3_take_adapters() RETURNS trigger LANGUAGE plpgsql {_SAFE} AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM jsonb_array_elements({_NAMED.format(p="NEW.provenance")}) AS a
               WHERE NOT EXISTS (SELECT 1 FROM public.take_files f
                                 WHERE f.take_id = NEW.id AND f.role = 'adapter'
                                   AND f.sha256 = a->>'sha256')) THEN
        RAISE EXCEPTION 'the take % names adapters whose files it does not bring', NEW.id
            USING ERRCODE = '{MISSING_ADAPTER}';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER takes_adapters AFTER INSERT ON public.takes
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.sa3_take_adapters();

CREATE TRIGGER adapters_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.adapters
    FOR EACH STATEMENT EXECUTE FUNCTION public.sa3_guard();
REVOKE ALL ON FUNCTION public.sa3_adapter_file(), public.sa3_take_adapters() FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sa3_team_reader') THEN
        GRANT SELECT ON public.adapters TO sa3_team_reader;
    END IF;
END $$;
"""


def step_sql() -> str:
    """Schema step 8: the adapter catalogue and the checks that pair takes and their files."""
    return _STEP
