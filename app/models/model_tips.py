"""The model combo's tooltips in plain words: whether a set is ready here and where it runs,
or that it is not and what to do in the window. The catalog's full reason (engine files,
runtimes, plugins) is the Models window's to show (Models > Manage models...), not a tooltip's
in the main window."""

from __future__ import annotations

from app.common.remedy_words import MODELS_WINDOW, RUNS_ON, window_words
from engines.errors import Advice


def model_tip(answer) -> str:
    """The tooltip of a model set whose catalog answer (engines.catalog) is `answer`."""
    if answer.runnable:
        where = RUNS_ON.get(answer.backend, "this machine")
        return f"Ready: runs on {where} here."
    reason = answer.reason
    fixes = [window_words(r) for r in reason.remedies] if isinstance(reason, Advice) else []
    if fixes:
        return (f"Cannot run here yet; try {' or '.join(dict.fromkeys(fixes))}. "
                f"{MODELS_WINDOW} says why.")
    return f"Cannot run here yet; {MODELS_WINDOW} says why and what it needs."
