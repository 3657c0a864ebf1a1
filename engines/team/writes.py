"""Schema step 5 (engines.team.migrations): every change to a take goes through functions that
check who is writing, so a publisher cannot change another designer's take with SQL of its own.

Who writes: `session_user` (the login the server authenticated; a function cannot change it)
and the designer name it writes as. A login made by `team add-designer NAME` is bound to NAME
in `designer_logins`: it writes as NAME whatever name it gives, and no other login may write
as NAME. Any other publisher login (the shared `sa3_publisher`) writes as the name it gives,
unless a login of its own holds that name. So the server guarantees that

  - nobody writes to the tables directly: a statement trigger refuses every INSERT, UPDATE,
    DELETE and TRUNCATE of anyone but the tables' owner (and superusers), whatever has been
    GRANTed, and the step also revokes the publisher group's table writes;
  - a take's files are those of its first publish (added in the same transaction as the take,
    never to a take that exists; step 7, engines.team.relabel, lets its first publisher alone
    point it at newly delivered files);
  - ratings, tags and notes are written only under the writer's own designer name, and the
    aggregates on the take (average stars, the tags) only by these functions;
  - a designer with a login of their own is the only one who can write as that designer.

What a shared login cannot give: designers who share one login (and its password) are the
same writer to the server, so any of them can rate, tag or publish under the name of another
who has no login of their own. Bind each designer to a login (`team add-designer`) where that
matters.

The functions are SECURITY DEFINER (they run as the schema's owner) with a fixed search_path
(pg_catalog first, pg_temp last) and name every table with its schema, so nothing a caller
creates is picked up; EXECUTE on the internal ones is revoked from PUBLIC.
"""

from __future__ import annotations

MAX_TAG_CHARS = 100  # as `library tag` takes them (engines.cli.library_edit)
MAX_TAGS = 50  # one call's
REFUSED_NAME = "SA301"  # SQLSTATE: a designer name that belongs to a login of its own
WRITER_ROLE = "sa3_team_publisher"  # engines.team.roles.PUBLISHER_ROLE

_TABLES = ("takes", "take_files", "ratings", "tags", "notes", "team_settings", "designer_logins")
_SAFE = "SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"

_IDENTITY = f"""
CREATE TABLE public.designer_logins (
    login name PRIMARY KEY,
    designer text NOT NULL,
    added timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX designer_logins_name ON public.designer_logins (lower(designer));

CREATE FUNCTION public.sa3_guard() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID),
                   'MEMBER') THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'the team library changes % only through its functions', TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$;

-- The designer the calling login writes as (see the module docstring); NULL for a login
-- that may only read.
CREATE FUNCTION public.sa3_whoami(p_designer text) RETURNS text LANGUAGE plpgsql STABLE
{_SAFE} AS $$
DECLARE
    bound text;
    wanted text := btrim(regexp_replace(coalesce(p_designer, ''), '\\s+', ' ', 'g'));
BEGIN
    IF NOT (pg_has_role(session_user, current_user, 'MEMBER') OR
            (EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{WRITER_ROLE}') AND
             pg_has_role(session_user, '{WRITER_ROLE}', 'MEMBER'))) THEN
        RETURN NULL;
    END IF;
    SELECT designer INTO bound FROM public.designer_logins WHERE login = session_user;
    IF bound IS NOT NULL THEN
        RETURN bound;
    END IF;
    IF wanted = '' OR char_length(wanted) > 80 THEN
        RAISE EXCEPTION 'a designer name is 1 to 80 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM public.designer_logins WHERE lower(designer) = lower(wanted)) THEN
        RAISE EXCEPTION 'the designer % has a login of their own', wanted
            USING ERRCODE = '{REFUSED_NAME}';
    END IF;
    RETURN wanted;
END $$;

CREATE FUNCTION public.sa3_writer(p_designer text) RETURNS text LANGUAGE plpgsql STABLE
{_SAFE} AS $$
DECLARE who text := public.sa3_whoami(p_designer);
BEGIN
    IF who IS NULL THEN
        RAISE EXCEPTION 'the login % may only read the team library', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN who;
END $$;
"""

_AGGREGATES = f"""
-- Tags keep the case they were given (CatIDs are case-sensitive); one spelling a take, the
-- first one given; compared without case.
DELETE FROM public.tags a USING public.tags b
    WHERE a.take_id = b.take_id AND a.designer = b.designer AND lower(a.tag) = lower(b.tag)
      AND (a.added, a.tag) > (b.added, b.tag);
CREATE UNIQUE INDEX tags_once ON public.tags (take_id, designer, lower(tag));

CREATE FUNCTION public.sa3_refresh(p_take bigint) RETURNS void LANGUAGE sql {_SAFE} AS $$
WITH spelled AS (
    SELECT DISTINCT ON (lower(g.tag)) g.tag FROM public.tags g WHERE g.take_id = p_take
    ORDER BY lower(g.tag), g.added, g.designer, g.tag
), fresh AS (
    SELECT coalesce((SELECT avg(r.stars) FROM public.ratings r WHERE r.take_id = p_take),
                    0)::real AS stars,
           (SELECT count(*) FROM public.ratings r WHERE r.take_id = p_take)::integer AS rated,
           coalesce((SELECT array_agg(tag ORDER BY lower(tag), tag) FROM spelled),
                    '{{}}') AS tag_list,
           coalesce((SELECT string_agg(tag, ' ' ORDER BY lower(tag), tag) FROM spelled),
                    '') AS tag_text
)
UPDATE public.takes t SET rating_avg = fresh.stars, rating_count = fresh.rated,
                          tag_list = fresh.tag_list, tag_text = fresh.tag_text
FROM fresh
WHERE t.id = p_take AND (t.rating_avg, t.rating_count, t.tag_list, t.tag_text)
    IS DISTINCT FROM (fresh.stars, fresh.rated, fresh.tag_list, fresh.tag_text)
$$;

CREATE FUNCTION public.sa3_add_tags(p_take bigint, p_who text, p_tags text[]) RETURNS void
LANGUAGE plpgsql {_SAFE} AS $$
DECLARE tag text;
BEGIN
    IF cardinality(p_tags) > {MAX_TAGS} THEN
        RAISE EXCEPTION 'at most {MAX_TAGS} tags at once' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOREACH tag IN ARRAY coalesce(p_tags, '{{}}') LOOP
        tag := btrim(regexp_replace(tag, '\\s+', ' ', 'g'));
        IF tag = '' OR char_length(tag) > {MAX_TAG_CHARS} THEN
            RAISE EXCEPTION 'a tag is 1 to {MAX_TAG_CHARS} characters'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        INSERT INTO public.tags (take_id, designer, tag) VALUES (p_take, p_who, tag)
            ON CONFLICT DO NOTHING;
    END LOOP;
END $$;
"""

_WRITES = f"""
CREATE FUNCTION public.sa3_publish(p_key text, p_take jsonb, p_embedding text,
                                   p_designer text, p_files jsonb, p_stars integer,
                                   p_tags text[], p_note text,
                                   OUT team_id bigint, OUT is_new boolean)
LANGUAGE plpgsql {_SAFE} AS $$
DECLARE who text := public.sa3_writer(p_designer);
BEGIN
    INSERT INTO public.takes (take_key, content_sha256, name, prompt, negative_prompt, seed,
                              model, tier, mode, seconds, sample_rate, samples, provenance,
                              designer, created, embedding)
    VALUES (p_key, p_take->>'content_sha256', coalesce(p_take->>'name', ''),
            coalesce(p_take->>'prompt', ''), coalesce(p_take->>'negative_prompt', ''),
            (p_take->>'seed')::bigint, coalesce(p_take->>'model', ''),
            coalesce(p_take->>'tier', ''), p_take->>'mode', (p_take->>'seconds')::float8,
            (p_take->>'sample_rate')::integer, (p_take->>'samples')::bigint,
            p_take->'provenance', who, (p_take->>'created')::timestamptz,
            p_embedding::public.vector)
    ON CONFLICT (take_key) DO NOTHING
    RETURNING id INTO team_id;
    is_new := team_id IS NOT NULL;
    IF is_new THEN  -- a take's files are those of its first publish, never added later
        INSERT INTO public.take_files (take_id, role, file_name, sha256, size, format)
        SELECT team_id, f.role, f.name, f.sha256, f.size, coalesce(f.format, '')
        FROM jsonb_to_recordset(p_files) AS f (role text, name text, sha256 text, size bigint,
                                               format text)
        ON CONFLICT DO NOTHING;
    ELSE
        SELECT id INTO team_id FROM public.takes WHERE take_key = p_key FOR UPDATE;
    END IF;
    IF coalesce(p_stars, 0) > 0 THEN
        PERFORM public.sa3_rate(team_id, who, p_stars);
    END IF;
    PERFORM public.sa3_add_tags(team_id, who, p_tags);
    IF btrim(coalesce(p_note, '')) <> '' THEN
        INSERT INTO public.notes (take_id, designer, body) VALUES (team_id, who, btrim(p_note))
            ON CONFLICT DO NOTHING;
    END IF;
    PERFORM public.sa3_refresh(team_id);
END $$;

-- Each returns false when there is no such take. The take's row is locked first, so each
-- recomputed aggregate reads every rating committed before it.
CREATE FUNCTION public.sa3_rate(p_take bigint, p_designer text, p_stars integer)
RETURNS boolean LANGUAGE plpgsql {_SAFE} AS $$
DECLARE who text := public.sa3_writer(p_designer);
BEGIN
    PERFORM 1 FROM public.takes WHERE id = p_take FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_stars IS NULL OR p_stars NOT BETWEEN 0 AND 5 THEN
        RAISE EXCEPTION 'a rating is 0 to 5 stars' USING ERRCODE = 'invalid_parameter_value';
    ELSIF p_stars = 0 THEN
        DELETE FROM public.ratings WHERE take_id = p_take AND designer = who;
    ELSE
        INSERT INTO public.ratings (take_id, designer, stars) VALUES (p_take, who, p_stars)
            ON CONFLICT (take_id, designer) DO UPDATE SET stars = EXCLUDED.stars,
                                                          updated = now();
    END IF;
    PERFORM public.sa3_refresh(p_take);
    RETURN true;
END $$;

CREATE FUNCTION public.sa3_retag(p_take bigint, p_designer text, p_add text[],
                                 p_remove text[]) RETURNS boolean LANGUAGE plpgsql {_SAFE} AS $$
DECLARE who text := public.sa3_writer(p_designer);
BEGIN
    PERFORM 1 FROM public.takes WHERE id = p_take FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM public.sa3_add_tags(p_take, who, p_add);
    DELETE FROM public.tags WHERE take_id = p_take AND designer = who
        AND lower(tag) IN (SELECT lower(x) FROM unnest(p_remove) AS x);
    PERFORM public.sa3_refresh(p_take);
    RETURN true;
END $$;

CREATE FUNCTION public.sa3_note(p_take bigint, p_designer text, p_body text)
RETURNS boolean LANGUAGE plpgsql {_SAFE} AS $$
DECLARE who text := public.sa3_writer(p_designer);
BEGIN
    PERFORM 1 FROM public.takes WHERE id = p_take FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO public.notes (take_id, designer, body) VALUES (p_take, who, btrim(p_body))
        ON CONFLICT DO NOTHING;
    RETURN true;
END $$;
"""


def _closing() -> str:
    guards = "\n".join(
        f"CREATE TRIGGER {table}_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON "
        f"public.{table} FOR EACH STATEMENT EXECUTE FUNCTION public.sa3_guard();"
        for table in _TABLES)
    return f"""
{guards}
REVOKE ALL ON FUNCTION public.sa3_guard(), public.sa3_refresh(bigint),
    public.sa3_add_tags(bigint, text, text[]) FROM PUBLIC;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{WRITER_ROLE}') THEN
        REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON public.takes, public.take_files,
            public.ratings, public.tags, public.notes FROM {WRITER_ROLE};
    END IF;
END $$;
DO $$ BEGIN PERFORM public.sa3_refresh(id) FROM public.takes; END $$;
"""


def step_sql() -> str:
    """Schema step 5: the designer logins, the write functions and the guards."""
    return _IDENTITY + _AGGREGATES + _WRITES + _closing()
