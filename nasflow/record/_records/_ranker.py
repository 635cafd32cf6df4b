"""The pairwise ranker's record (``nasflow:ranker``): which features it weighed, with which
weights, fitted on how many of the study's own labels, or why the prior was used."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from nasflow.errors import StudyRecordError
from nasflow.record._keys import RANKER_KEY
from nasflow.record._records._phases import _count, _object, _text
from nasflow.record._typed import _opt_str

#: Where a ranker's weights came from.
SOURCES = ("fitted", "prior", "fallback")


@dataclass(frozen=True)
class RankerRecord:
    """What a ranker did, for the summary and the report.

    Attributes:
        features: The feature names, in the weights' order.
        weights: The weight of each standardised feature (a higher score ranks higher).
        source: ``"fitted"`` (on this study's labels), ``"prior"`` (the suite's weights)
            or ``"fallback"`` (the fixed rule; no usable weights).
        labels: Labelled candidates the fit saw (0 for the prior).
        pairs: Ordered pairs it was fitted on.
        note: Why a fit was not used (too few labels, no pair, a non-finite feature...).
    """

    KEY: ClassVar[str] = RANKER_KEY

    features: tuple[str, ...]
    weights: tuple[float, ...]
    source: str
    labels: int = 0
    pairs: int = 0
    note: str | None = None

    @property
    def key(self) -> str:
        """The study user attribute it is stored under."""
        return self.KEY

    def line(self) -> str:
        """One line for the summary: the source, the labels and the largest weights (up to
        four; a feature weighed 0 is left out)."""
        top = sorted(zip(self.features, self.weights, strict=True), key=lambda p: -abs(p[1]))
        shown = ", ".join(f"{n} {w:+.2f}" for n, w in top[:4] if w) or "every weight 0"
        fit = f" on {self.labels} labels ({self.pairs} pairs)" if self.source == "fitted" else ""
        why = f"; {self.note}" if self.note else ""
        return f"ranker: {self.source}{fit}: {shown}{why}"

    @classmethod
    def from_dict(cls, record: Any) -> RankerRecord:
        record = _object(record, RANKER_KEY)
        features, weights = record.get("features"), record.get("weights")
        if (
            not isinstance(features, list | tuple)
            or not isinstance(weights, list | tuple)
            or len(features) != len(weights)
            or not all(isinstance(w, int | float) and not isinstance(w, bool) for w in weights)
        ):
            raise StudyRecordError(
                f"{RANKER_KEY}: features {features!r:.60} and weights {weights!r:.60} are not "
                "two lists of one length (names, numbers)"
            )
        source = _text(record, "source", RANKER_KEY)
        if source not in SOURCES:
            raise StudyRecordError(f"{RANKER_KEY}: source {source!r:.40}, not one of {SOURCES}")
        return cls(
            tuple(str(f) for f in features),
            tuple(float(w) for w in weights),
            source,
            _count(record, "labels", RANKER_KEY),
            _count(record, "pairs", RANKER_KEY),
            _opt_str(record.get("note")),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["features"], out["weights"] = list(self.features), list(self.weights)
        return out
