"""Layer tables of timm models for the GPU model's calibration, from the survey's cache.

:class:`SurveyTables` is the table source (``(model, image size) -> LayerTable``) that
:func:`nasfilter.oracle.calibration.build_samples` reads: the survey's layer analysis of the
timm model at that size (timm on the meta device), remembered in the survey's profile cache
(:mod:`nasfilter.survey.cache`). It lives here, on the survey's side, so that the oracle
imports nothing of the survey.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nasfilter.bench.layer_table import LayerTable
from nasfilter.survey.cache import cache_folder, profile_all


class SurveyTables:
    """Layer tables of timm models from the survey's profile cache.

    Each (model, image size) is analysed once (in ``jobs`` worker processes) and remembered
    in the cache folder under ``root`` (default ``~/.cache/nasfilter/survey``, versioned by
    timm and the analysis); a model that cannot be analysed is remembered as its error
    message. Calling it raises ValueError with that message. Raises ImportError naming the
    survey extra when timm is missing.
    """

    def __init__(self, root: str | Path | None = None, jobs: int = 1) -> None:
        self.folder = cache_folder(root)  # imports timm: ImportError naming the extra
        self.jobs = jobs
        self._profiles: dict[tuple[str, int], Any] = {}

    def prefetch(self, pairs: Sequence[tuple[str, int]]) -> None:
        """Analyse (or read from the cache) every (model, size) of ``pairs`` at once."""
        todo = [p for p in dict.fromkeys(pairs) if p not in self._profiles]
        if todo:
            self._profiles.update(profile_all(todo, self.folder, jobs=self.jobs))

    def __call__(self, model: str, img_size: int) -> LayerTable:
        key = (model, int(img_size))
        self.prefetch([key])
        profile = self._profiles[key]
        if isinstance(profile, str):
            raise ValueError(profile)
        table: LayerTable = profile.table
        return table
