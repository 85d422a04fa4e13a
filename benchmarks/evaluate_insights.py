"""
How far the insights analysis agrees with careful human readers, on the
hand-labelled reviews of benchmarks/insights_eval/ (see GUIDE.md there).

    python benchmarks/evaluate_insights.py [--part dev|calibrate|heldout|all] [--json]
        [--show-errors N] [--labels FILE ...] [--business FILE]
        [--predictions FILE] [--check]

Each labelled review is published as a review of the business (by default
the demo business, whose technicians and services the labels name) and the
whole set goes through the daemon's own derivation (derive_insights, the
function that builds /insights.json); its per_review entries are compared
with the labels:

  - review sentiment: the share of reviews whose label agrees with the
    human one (also on the reviews marked mixed, and by kind of text);
  - aspects: precision, recall and F1 of the (review, aspect) pairs the
    analysis lists against those the reader marked, micro-averaged; the
    same counting only the analysis's non-neutral aspects; and, where both
    found an aspect, how often its label agrees with the reader's polarity;
  - the same per aspect;
  - technician, service and area mentions: precision and recall.

--part all (the default) reports each part and all together.  The
held-out part is for reporting only: --show-errors prints the dev and
calibrate parts' disagreements and refuses to print the held-out part's.  --labels
scores another labelled file (the same format) instead of the parts;
--predictions scores a saved per_review object (or a whole /insights.json
document) instead of running the analysis; --check only checks the label
files.  Exit status 2 on a bad label file or a refused request.

The figures are also importable: evaluate(items) returns them, load_items()
and load_part() read labelled files.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviewsd.data.loading import DEMO_DATA  # noqa: E402
from reviewsd.data.mentions import Matcher  # noqa: E402
from reviewsd.data.model import (  # noqa: E402
    Business,
    Dataset,
    Review,
    business_from_json,
    newest_first,
)
from reviewsd.insights import ReviewCache, derive_insights  # noqa: E402
from reviewsd.insights.data import ASPECTS  # noqa: E402

EVAL_DIR = Path(__file__).resolve().parent / "insights_eval"
PARTS = {
    "dev": EVAL_DIR / "dev.jsonl",
    "train": EVAL_DIR / "train.jsonl",
    "calibrate": EVAL_DIR / "calibrate.jsonl",
    "heldout": EVAL_DIR / "heldout.jsonl",
}
#: The parts whose disagreements may be read.
READABLE = ("dev", "train", "calibrate")

SENTIMENTS = ("positive", "neutral", "negative")
POLARITIES = ("positive", "negative")
KINDS = frozenset(
    "short long plain mixed contrast implicit outcome sarcastic neutral "
    "polysemy misleading typos emoji mismatch".split()
)
MENTION_KINDS = ("technicians", "services", "areas")
#: Labelled reviews without a date are dated one a day back from here.
FIRST_DATE = datetime.date(2025, 6, 30)


class LabelError(ValueError):
    """A labelled file that does not follow the guide's format."""


@attrs.frozen
class Item:
    """One labelled review."""

    id: str
    rating: int
    text: str
    sentiment: str
    mixed: bool
    aspects: Mapping[str, str]
    technicians: frozenset[str]
    services: frozenset[str]
    areas: frozenset[str]
    kinds: tuple[str, ...]
    date: datetime.date | None = None


def demo_business() -> Business:
    """The business the shipped labels name."""
    return business_from_json(json.loads((DEMO_DATA / "business.json").read_bytes()))


def _names(record: Mapping[str, Any], key: str, known: Iterable[str]) -> frozenset[str]:
    values = record.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise LabelError(f"{key} must be a list of strings")
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise LabelError(f"{key}: not the business's: {', '.join(unknown)}")
    return frozenset(values)


def _item(record: Any, business: Business) -> Item:
    """One line of a labelled file, checked against the guide and C{business}."""
    if not isinstance(record, dict):
        raise LabelError("not a JSON object")
    item_id, rating, text = record.get("id"), record.get("rating"), record.get("text")
    if not isinstance(item_id, str) or not item_id:
        raise LabelError("id must be a non-empty string")
    if type(rating) is not int or not 1 <= rating <= 5:
        raise LabelError(f"{item_id}: rating must be 1 to 5")
    if not isinstance(text, str) or not text.strip():
        raise LabelError(f"{item_id}: text must be a non-empty string")
    if record.get("sentiment") not in SENTIMENTS:
        raise LabelError(f"{item_id}: sentiment must be one of {SENTIMENTS}")
    if not isinstance(record.get("mixed", False), bool):
        raise LabelError(f"{item_id}: mixed must be true or false")
    aspects = record.get("aspects", {})
    ids = {a.id for a in ASPECTS}
    if not isinstance(aspects, dict) or not all(
        a in ids and p in POLARITIES for a, p in aspects.items()
    ):
        raise LabelError(
            f"{item_id}: aspects must map aspect ids of aspects.json to {POLARITIES}"
        )
    kinds = record.get("kinds", [])
    if not isinstance(kinds, list) or not set(kinds) <= KINDS:
        raise LabelError(f"{item_id}: kinds must be a list of {sorted(KINDS)}")
    date = record.get("date")
    try:
        when = None if date is None else datetime.date.fromisoformat(date)
    except (TypeError, ValueError):
        raise LabelError(f"{item_id}: date must be YYYY-MM-DD") from None
    try:
        return Item(
            id=item_id,
            rating=rating,
            text=text,
            sentiment=record["sentiment"],
            mixed=record.get("mixed", False),
            aspects=dict(aspects),
            technicians=_names(
                record, "technicians", [t.name for t in business.technicians]
            ),
            services=_names(record, "services", [s.id for s in business.services]),
            areas=_names(record, "areas", business.service_areas),
            kinds=tuple(kinds),
            date=when,
        )
    except LabelError as e:
        raise LabelError(f"{item_id}: {e}") from None


def load_items(paths: Iterable[Path], business: Business | None = None) -> list[Item]:
    """
    The labelled reviews of C{paths}, checked; ids and texts unique across
    them (a text in two parts would leak the held-out part).
    """
    business = business or demo_business()
    items: list[Item] = []
    seen: set[str] = set()
    texts: set[str] = set()
    for path in paths:
        for number, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = _item(json.loads(line), business)
            except (LabelError, json.JSONDecodeError) as e:
                raise LabelError(f"{path}:{number}: {e}") from None
            if item.id in seen:
                raise LabelError(f"{path}:{number}: duplicate id {item.id}")
            text = " ".join(item.text.casefold().split())
            if text in texts:
                raise LabelError(f"{path}:{number}: {item.id}: duplicate text")
            seen.add(item.id)
            texts.add(text)
            items.append(item)
    return items


def load_part(part: str, business: Business | None = None) -> list[Item]:
    """The labelled reviews of one part (C{dev}, C{heldout}) or of C{all}."""
    names = list(PARTS) if part == "all" else [part]
    return load_items([PARTS[name] for name in names], business)


# --- the analysis ------------------------------------------------------------


def predict(
    items: Sequence[Item], business: Business | None = None
) -> tuple[dict[str, Any], str]:
    """
    The C{per_review} entries of C{items} and the C{model} string, from the
    daemon's derivation of a dataset made of them (an empty cache, so every
    text is analysed).
    """
    business = business or demo_business()
    reviews = [
        Review(
            id=item.id,
            author="Evaluation",
            author_avatar_url=None,
            rating=item.rating,
            date=item.date or FIRST_DATE - datetime.timedelta(days=number),
            text=item.text,
            source="evaluation",
            source_url=None,
            owner_reply=None,
            verified=True,
        )
        for number, item in enumerate(items)
    ]
    dataset = Dataset(business=business, reviews=newest_first(reviews), unpublished=0)
    document = derive_insights(
        dataset, Matcher(business), ReviewCache(), "2025-07-01T00:00:00Z"
    )
    per_review = orjson.loads(orjson.dumps(document["per_review"]))
    return per_review, str(document["model"])


def load_predictions(path: Path) -> dict[str, Any]:
    """A saved C{per_review} object, or the one of an /insights.json document."""
    value = json.loads(Path(path).read_bytes())
    if isinstance(value, dict) and isinstance(value.get("per_review"), dict):
        value = value["per_review"]
    if not isinstance(value, dict):
        raise LabelError(f"{path}: not a per_review object")
    return value


# --- the figures -------------------------------------------------------------


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _agreement(agree: int, total: int) -> dict[str, Any]:
    return {"rate": _ratio(agree, total), "agree": agree, "total": total}


def _prf(tp: int, found: int, labelled: int) -> dict[str, Any]:
    precision, recall = _ratio(tp, found), _ratio(tp, labelled)
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision is not None and recall is not None and precision + recall
        else None
    )
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tp": tp,
        "found": found,
        "labelled": labelled,
    }


def predicted_label(entry: Mapping[str, Any] | None) -> str | None:
    """The review sentiment label of one C{per_review} entry."""
    sentiment = (entry or {}).get("sentiment")
    return sentiment.get("label") if sentiment else None


def predicted_aspects(
    entry: Mapping[str, Any] | None, *, opinionated: bool = False
) -> dict[str, str | None]:
    """Aspect id to label of one C{per_review} entry (non-neutral ones only)."""
    found = {a["id"]: a.get("label") for a in (entry or {}).get("aspects", [])}
    if opinionated:
        return {a: label for a, label in found.items() if label != "neutral"}
    return found


def predicted_mentions(entry: Mapping[str, Any] | None, kind: str) -> set[str]:
    return set(((entry or {}).get("mentions") or {}).get(kind, []))


def _aspect_figures(
    items: Sequence[Item], predictions: Mapping[str, Any], opinionated: bool
) -> dict[str, Any]:
    """Micro and per-aspect P/R/F1 and polarity agreement."""
    order = [a.id for a in ASPECTS]
    counts: dict[str, Counter[str]] = {}
    for item in items:
        found = predicted_aspects(predictions.get(item.id), opinionated=opinionated)
        for aspect in set(found) | set(item.aspects):
            if aspect not in order:
                order.append(aspect)
            count = counts.setdefault(aspect, Counter())
            count["found"] += aspect in found
            count["labelled"] += aspect in item.aspects
            if aspect in found and aspect in item.aspects:
                count["tp"] += 1
                count["agree"] += found[aspect] == item.aspects[aspect]
    total: Counter[str] = sum(counts.values(), Counter())
    return {
        **_prf(total["tp"], total["found"], total["labelled"]),
        "polarity": _agreement(total["agree"], total["tp"]),
        "per_aspect": {
            aspect: {
                **_prf(c["tp"], c["found"], c["labelled"]),
                "polarity": _agreement(c["agree"], c["tp"]),
            }
            for aspect in order
            for c in [counts.get(aspect, Counter())]
        },
    }


def _sentiment_figures(
    items: Sequence[Item], predictions: Mapping[str, Any]
) -> dict[str, Any]:
    confusion: dict[str, Counter[str]] = {s: Counter() for s in SENTIMENTS}
    agree: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for item in items:
        label = predicted_label(predictions.get(item.id))
        confusion[item.sentiment][str(label)] += 1
        hit = label == item.sentiment
        groups = ["all", *(f"kind:{k}" for k in item.kinds)]
        groups += ["mixed"] if item.mixed else []
        groups += [f"stars:{item.rating}"]
        for group in groups:
            total[group] += 1
            agree[group] += hit

    def share(prefix: str) -> dict[str, Any]:
        return {
            key[len(prefix) :]: _agreement(agree[key], total[key])
            for key in sorted(total)
            if key.startswith(prefix)
        }

    return {
        "accuracy": _ratio(agree["all"], total["all"]),
        **_agreement(agree["all"], total["all"]),
        "mixed": _agreement(agree["mixed"], total["mixed"]),
        "by_kind": share("kind:"),
        "by_stars": share("stars:"),
        "confusion": {gold: dict(sorted(c.items())) for gold, c in confusion.items()},
    }


def _mention_figures(
    items: Sequence[Item], predictions: Mapping[str, Any], kind: str
) -> dict[str, Any]:
    tp = found = labelled = 0
    for item in items:
        gold: frozenset[str] = getattr(item, kind)
        predicted = predicted_mentions(predictions.get(item.id), kind)
        tp += len(gold & predicted)
        found += len(predicted)
        labelled += len(gold)
    return _prf(tp, found, labelled)


def score(
    items: Sequence[Item], predictions: Mapping[str, Any], model: str | None = None
) -> dict[str, Any]:
    """
    The figures of C{predictions} (review id to C{per_review} entry) against
    the labels of C{items}; a review without an entry counts as one that
    found nothing.
    """
    return {
        "model": model,
        "reviews": len(items),
        "unanalysed": sum(item.id not in predictions for item in items),
        "labels": {
            "sentiment": dict(Counter(item.sentiment for item in items)),
            "mixed": sum(item.mixed for item in items),
            "aspects": sum(len(item.aspects) for item in items),
        },
        "sentiment": _sentiment_figures(items, predictions),
        "aspects": _aspect_figures(items, predictions, opinionated=False),
        "opinionated_aspects": _aspect_figures(items, predictions, opinionated=True),
        "mentions": {
            kind: _mention_figures(items, predictions, kind) for kind in MENTION_KINDS
        },
    }


def evaluate(
    items: Sequence[Item],
    business: Business | None = None,
    predictions: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """
    The figures of the daemon's analysis on C{items} (or of C{predictions},
    when given, without running it).
    """
    model = None
    if predictions is None:
        predictions, model = predict(items, business)
    return score(items, predictions, model)


# --- reading them --------------------------------------------------------------


def disagreements(
    items: Sequence[Item], predictions: Mapping[str, Any], limit: int
) -> list[str]:
    """Up to C{limit} reviews where the analysis and the reader differ, described."""
    shown = []
    for item in items:
        entry = predictions.get(item.id)
        notes = []
        label = predicted_label(entry)
        if label != item.sentiment:
            score_ = ((entry or {}).get("sentiment") or {}).get("score")
            notes.append(
                f"sentiment: human {item.sentiment}, analysis {label} ({score_})"
            )
        found = predicted_aspects(entry)
        missed = sorted(set(item.aspects) - set(found))
        extra = sorted(set(found) - set(item.aspects))
        flipped = [
            f"{a} human {item.aspects[a]}, analysis {found[a]}"
            for a in sorted(set(found) & set(item.aspects))
            if found[a] != item.aspects[a]
        ]
        if missed:
            notes.append("aspects missed: " + ", ".join(missed))
        if extra:
            notes.append(
                "aspects extra: " + ", ".join(f"{a} ({found[a]})" for a in extra)
            )
        if flipped:
            notes.append("aspect polarity: " + "; ".join(flipped))
        for kind in MENTION_KINDS:
            gold, got = getattr(item, kind), predicted_mentions(entry, kind)
            if gold != got:
                notes.append(f"{kind}: human {sorted(gold)}, analysis {sorted(got)}")
        if notes:
            text = " ".join(item.text.split())
            shown.append(
                f"{item.id} ({item.rating} stars, {','.join(item.kinds)}): {text}\n"
                + "".join(f"    {note}\n" for note in notes)
            )
            if len(shown) == limit:
                break
    return shown


def _f(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


def _share(figure: Mapping[str, Any]) -> str:
    return f"{_f(figure['rate'])} ({figure['agree']}/{figure['total']})"


def report(name: str, figures: Mapping[str, Any]) -> str:
    """The figures of one part, as text."""
    sentiment, aspects = figures["sentiment"], figures["aspects"]
    opinionated = figures["opinionated_aspects"]
    lines = [
        f"{name}: {figures['reviews']} reviews ({figures['labels']['mixed']} mixed, "
        f"{figures['labels']['aspects']} labelled aspects)"
        + (f"; {figures['model']}" if figures["model"] else ""),
        f"  review sentiment accuracy   {_share(sentiment)}"
        f"   on mixed reviews {_share(sentiment['mixed'])}",
        "    human -> analysis: "
        + "; ".join(
            f"{gold}: " + ", ".join(f"{n} {label}" for label, n in row.items())
            for gold, row in sentiment["confusion"].items()
            if row
        ),
        "    by kind: "
        + ", ".join(f"{k} {_share(v)}" for k, v in sentiment["by_kind"].items()),
        "    by stars: "
        + ", ".join(f"{k} {_share(v)}" for k, v in sentiment["by_stars"].items()),
        f"  aspects (micro)             P {_f(aspects['precision'])}  "
        f"R {_f(aspects['recall'])}  F1 {_f(aspects['f1'])}  "
        f"(tp {aspects['tp']}, found {aspects['found']}, "
        f"labelled {aspects['labelled']})",
        f"    non-neutral found only    P {_f(opinionated['precision'])}  "
        f"R {_f(opinionated['recall'])}  F1 {_f(opinionated['f1'])}  "
        f"(tp {opinionated['tp']}, found {opinionated['found']})",
        f"  aspect polarity agreement   {_share(aspects['polarity'])}",
        "  per aspect               labelled found    P      R      F1    polarity",
    ]
    for aspect, row in aspects["per_aspect"].items():
        lines.append(
            f"    {aspect:<22} {row['labelled']:>6} {row['found']:>6}  "
            f"{_f(row['precision'])}  {_f(row['recall'])}  {_f(row['f1'])}  "
            f"{_share(row['polarity'])}"
        )
    lines.append("  mentions                    P      R     (tp/found/labelled)")
    for kind, row in figures["mentions"].items():
        lines.append(
            f"    {kind:<22}    {_f(row['precision'])}  {_f(row['recall'])}  "
            f"({row['tp']}/{row['found']}/{row['labelled']})"
        )
    if figures["unanalysed"]:
        lines.append(f"  {figures['unanalysed']} reviews had no per_review entry")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--part", choices=[*PARTS, "all"], default="all")
    parser.add_argument("--labels", type=Path, nargs="+", metavar="FILE")
    parser.add_argument("--business", type=Path, metavar="FILE")
    parser.add_argument("--predictions", type=Path, metavar="FILE")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show-errors", type=int, default=0, metavar="N")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)

    try:
        business = (
            business_from_json(json.loads(args.business.read_bytes()))
            if args.business
            else demo_business()
        )
        if args.labels:
            parts = {"labels": load_items(args.labels, business)}
        else:
            names = list(PARTS) if args.part == "all" else [args.part]
            parts = {name: load_part(name, business) for name in names}
        predictions = load_predictions(args.predictions) if args.predictions else None
    except (LabelError, OSError, ValueError) as e:
        print(f"evaluate_insights: {e}", file=sys.stderr)
        return 2
    if args.show_errors and args.part == "heldout" and not args.labels:
        print(
            "evaluate_insights: the held-out part is for reporting only; "
            "--show-errors reads the dev and calibrate parts",
            file=sys.stderr,
        )
        return 2
    if args.check:
        for name, items in parts.items():
            print(f"{name}: {len(items)} labelled reviews, ok")
        return 0

    every = [item for items in parts.values() for item in items]
    model = None
    if predictions is None:
        # each part alone, as a data directory of its own would be
        predictions = {}
        for items in parts.values():
            found, model = predict(items, business)
            predictions.update(found)
    results = {name: score(items, predictions, model) for name, items in parts.items()}
    if len(parts) > 1:
        results["all"] = score(every, predictions, model)
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print("\n\n".join(report(name, figures) for name, figures in results.items()))
    if args.show_errors:
        readable = parts.get("labels") or [
            item for name in READABLE for item in parts.get(name, [])
        ]
        shown = disagreements(readable, predictions, args.show_errors)
        print(f"\n{len(shown)} disagreements shown (dev and calibrate labels only):\n")
        print("\n".join(shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
