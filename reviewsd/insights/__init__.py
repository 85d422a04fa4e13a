"""
Insights: what the reviews say, derived from them deterministically.

Clause sentiment by VADER with a domain lexicon and patterns of implicit
outcomes, aspects from a construction and home-services taxonomy placed in
the clause that gives them an opinion, the technicians, services, places
and problems customers mention, topics, a monthly series with its trend, an
FAQ, a summary and a pull quote, all in one JSON-ready document
(L{derive_insights}; its fields are documented in
L{reviewsd.insights.derive}).  Per-review analyses are cached by review id
and text hash (L{ReviewCache}). An operator's C{insights.json} may replace
whole groups: that file is part of the data directory
(L{reviewsd.data.overlay}).

No Twisted here: derivation is blocking and meant for a worker thread.

Modules, one concern each:

  - C{data}: the JSON data files (taxonomy, outcomes, topics, problems,
    lexicon, words, measured figures);
  - C{cues}: whole-word cue matching for aspects, topics and problems;
  - C{patterns}: many regular expressions, each tried where it can begin;
  - C{text}: sentence splitting and phrase extraction;
  - C{clauses}: clauses and segments of a sentence, and their weights;
  - C{vader}: VADER's compound score, computed faster;
  - C{sentiment}: VADER with the domain lexicon and the outcomes, the
    labels, and the stars as evidence;
  - C{detector}: trained weights that read what the words say beyond the
    lexicon: which aspects, their sides, the tone of a text the lexicon
    reads no opinion in;
  - C{verdict}: a review's label from its text and its stars, by trained
    weights;
  - C{analysis}: the cached analysis of one review text;
  - C{cache}: L{ReviewCache}, in memory and in SQLite;
  - C{temporal}: the monthly series and the trend rule;
  - C{prose}: FAQ, summary and pull quote;
  - C{tally}: what each review contributes, and what a pass adds up;
  - C{derive}: the document.
"""

from reviewsd.insights.analysis import ENGINE_VERSION
from reviewsd.insights.cache import ReviewCache
from reviewsd.insights.derive import INSIGHTS_VERSION, MODEL, derive_insights
from reviewsd.insights.tally import MEMO_VERSION, share_per_review

__all__ = [
    "ENGINE_VERSION",
    "INSIGHTS_VERSION",
    "MEMO_VERSION",
    "MODEL",
    "ReviewCache",
    "derive_insights",
    "share_per_review",
]
