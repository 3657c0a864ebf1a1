"""Schema step 6 (engines.team.migrations): what the server refuses whoever writes it, so a
publisher's SQL of its own cannot put there what the command line and the window never send.

  - a designer name holding control, zero-width or direction characters ('ann' + U+200B looks
    like 'ann' in a list: one designer passing for another; ESC rewrites a terminal);
  - a note that is blank, and text past a bound (a 50 MB note or prompt fills the server and
    every reader's memory);
  - a file name that is not one plain name (no folder, no control characters): a fetch never
    writes outside its folder whatever the name (engines.team.fetching), and the name is
    refused before anyone fetches it.

The bounds are checked when a row is inserted, never when an older row is updated (its
aggregates), so a take published before this step keeps working.
"""

from __future__ import annotations

from engines.team.writes import REFUSED_NAME, WRITER_ROLE

MAX_TEXT_CHARS = 10_000  # a take's name, prompt, negative prompt; a note
MAX_WORD_CHARS = 200  # a take's model, tier, mode; a file's role and format
MAX_FILE_NAME_CHARS = 255  # what most file systems allow in one name
MAX_PROVENANCE_BYTES = 1_000_000
# Control, format (zero-width, direction, U+FEFF, soft hyphen, tag characters) and line and
# paragraph separators, as engines.text_display.is_hidden finds them: escapes the regular
# expression reads (a plain string literal keeps the backslashes).
HIDDEN = ("[\\x01-\\x1f\\x7f-\\x9f\\u00ad\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e"
          "\\u2060-\\u206f\\ufeff\\ufff9-\\ufffb\\U000e0000-\\U000e007f]")
_SAFE = "SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"

_WHOAMI = f"""
CREATE OR REPLACE FUNCTION public.sa3_whoami(p_designer text) RETURNS text LANGUAGE plpgsql
STABLE {_SAFE} AS $$
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
    IF wanted ~ '{HIDDEN}' THEN
        RAISE EXCEPTION 'a designer name holds no control, zero-width or direction characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM public.designer_logins WHERE lower(designer) = lower(wanted)) THEN
        RAISE EXCEPTION 'the designer % has a login of their own', wanted
            USING ERRCODE = '{REFUSED_NAME}';
    END IF;
    RETURN wanted;
END $$;
"""

_BOUNDS = f"""
CREATE FUNCTION public.sa3_bounds() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_TABLE_NAME = 'takes' THEN
        IF greatest(char_length(NEW.name), char_length(NEW.prompt),
                    char_length(NEW.negative_prompt)) > {MAX_TEXT_CHARS}
           OR greatest(char_length(NEW.model), char_length(NEW.tier),
                       char_length(NEW.mode)) > {MAX_WORD_CHARS}
           OR octet_length(NEW.provenance::text) > {MAX_PROVENANCE_BYTES} THEN
            RAISE EXCEPTION 'a take''s name and prompts are at most {MAX_TEXT_CHARS} characters'
                USING ERRCODE = 'string_data_right_truncation';
        END IF;
    ELSIF TG_TABLE_NAME = 'take_files' THEN
        IF NEW.file_name !~ '^[^/\\\\]{{1,{MAX_FILE_NAME_CHARS}}}$' OR NEW.file_name IN ('.', '..')
           OR NEW.file_name ~ '{HIDDEN}'
           OR greatest(char_length(NEW.role), char_length(NEW.format)) > {MAX_WORD_CHARS} THEN
            RAISE EXCEPTION 'a take''s file name is one plain name of at most '
                '{MAX_FILE_NAME_CHARS} characters' USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSIF TG_TABLE_NAME = 'notes' THEN
        IF btrim(NEW.body) = '' OR char_length(NEW.body) > {MAX_TEXT_CHARS} THEN
            RAISE EXCEPTION 'a note is 1 to {MAX_TEXT_CHARS} characters'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    RETURN NEW;
END $$;
REVOKE ALL ON FUNCTION public.sa3_bounds() FROM PUBLIC;
CREATE TRIGGER takes_bounds BEFORE INSERT ON public.takes
    FOR EACH ROW EXECUTE FUNCTION public.sa3_bounds();
CREATE TRIGGER take_files_bounds BEFORE INSERT ON public.take_files
    FOR EACH ROW EXECUTE FUNCTION public.sa3_bounds();
CREATE TRIGGER notes_bounds BEFORE INSERT ON public.notes
    FOR EACH ROW EXECUTE FUNCTION public.sa3_bounds();
"""


def step_sql() -> str:
    """Schema step 6: names without hidden characters, bounded text, plain file names."""
    return _WHOAMI + _BOUNDS
