"""The GPU service's progress and outcome signals reach every listener; a controller that
submits jobs of its own answers only for those (the keys it keeps in `pending`)."""

from __future__ import annotations


class OwnJobs:
    """Mixed into a QObject that keeps `pending` (job key -> what the job is for): progress
    text goes to `_report(text)`, outcomes to `_done(key, value)` or `_failed(key, sentence)`.
    Call `listen_to(gpu)` once."""

    pending: dict

    def listen_to(self, gpu) -> None:
        gpu.progress.connect(self._progress)
        gpu.outcome.connect(self._outcome)

    def _report(self, text: str) -> None:
        raise NotImplementedError

    def _done(self, key: int, value) -> None:
        raise NotImplementedError

    def _failed(self, key: int, sentence: str) -> None:
        raise NotImplementedError

    def _progress(self, progress) -> None:
        if progress.key in self.pending and isinstance(progress.value, str):
            self._report(progress.value)

    def _outcome(self, outcome) -> None:
        if outcome.key not in self.pending:
            return  # another controller's job
        if outcome.error is None:
            self._done(outcome.key, outcome.value)
        else:
            self._failed(outcome.key, str(outcome.error))
