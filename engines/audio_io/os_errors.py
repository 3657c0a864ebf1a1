"""OS errors as words for the user: kept as a name for the audio modules; the table lives in
engines.error_sentences, the one place every failure is put into words."""

from engines.error_sentences import os_reason

__all__ = ["os_reason"]
