"""
Deterministic synthetic review data at any size, for benchmarks and large
tests: the demo business, and reviews whose text mentions its technicians,
services and places and praises or blames punctuality, price, cleanup,
communication and workmanship in line with the rating.

    python benchmarks/synthetic.py --reviews 100000 --out /tmp/data-100k
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
from pathlib import Path
from typing import Any

DEMO = Path(__file__).resolve().parent.parent / "demo" / "business.json"

_OPENERS = [
    "{tech} came out on {day} to look at our {kw}.",
    "We hired them for {service} at our place in {area}.",
    "Called about a {problem} {kw} and they had someone here within {n} hours.",
    "This was our {ordinal} project with them, this time {service}.",
    "Needed help with the {kw} before {event}.",
    "Our {kw} in {area} had been giving us trouble for {n} months.",
]
_GOOD = [
    "{tech} was on time, polite and explained everything.",
    "Fair price and the crew cleaned up every evening.",
    "The {kw} looks great and the work is solid.",
    "Very professional from start to finish, {n}/10.",
    "They finished {n} days early and stayed on budget.",
    "Honest quote, no pressure, and the {kw} works perfectly now.",
    "{tech} was super knowledgeable and found the real problem fast.",
    "Spotless job site, they even vacuumed after the {kw} install.",
    "Great communication, texts with photos every afternoon.",
    "Would hire again, {tech} is a gem.",
]
_MIXED = [
    "The {kw} came out fine but it took {n} weeks longer than planned.",
    "Good work overall, a bit pricey for a small {kw} job.",
    "Scheduling took a while but {tech} did a decent job.",
    "They left some dust behind, otherwise the {kw} is ok.",
]
_BAD = [
    "{tech} showed up {n} hours late and never called.",
    "The final bill was ${money} more than the quote.",
    "Nobody showed up for the appointment on {day}.",
    "The {kw} started leaking again after {n} weeks.",
    "They left a mess of {kw} scraps in the yard.",
    "Sloppy work, the {kw} is crooked and uneven.",
    "Rude office staff and hidden fees on the invoice.",
    "Wrong part ordered twice, we waited {n} days.",
]
_CLOSERS = [
    "Thanks again, {tech}!",
    "Highly recommend to anyone in {area}.",
    "Will use them again for the {kw}.",
    "I would not hire them again.",
    "Can't say enough good things.",
    "Hope they fix their scheduling.",
    "",
]
_DAYS = ["Monday", "a Saturday", "a Sunday", "Friday morning", "Tuesday afternoon"]
_PROBLEMS = ["leaking", "broken", "noisy", "dead", "sagging", "cracked"]
_EVENTS = ["the holidays", "winter", "our move", "the inspection", "the party"]
_ORDINALS = ["second", "third", "fourth", "fifth"]
_FIRST = [
    "Ana",
    "Ben",
    "Chloe",
    "Diego",
    "Emma",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jamal",
    "Kate",
    "Luis",
    "Maya",
    "Nate",
    "Olga",
    "Priya",
    "Quinn",
    "Ravi",
    "Sara",
    "Tom",
    "Uma",
    "Victor",
    "Wen",
    "Yusuf",
    "Zoe",
]


def _business() -> dict[str, Any]:
    return json.loads(DEMO.read_text())


def _text(rng: random.Random, rating: int, business: dict[str, Any]) -> str:
    technician = rng.choice(business["technicians"])
    service = rng.choice(business["services"])
    slots = {
        "tech": rng.choice([technician["name"], *technician["aliases"]]),
        "service": service["name"].lower(),
        "kw": rng.choice(service["keywords"] or [service["name"]]).lower(),
        "area": rng.choice(business["service_areas"]),
        "day": rng.choice(_DAYS),
        "problem": rng.choice(_PROBLEMS),
        "event": rng.choice(_EVENTS),
        "ordinal": rng.choice(_ORDINALS),
        "n": rng.randint(2, 12),
        "money": rng.randint(80, 4000),
    }
    if rating >= 4:
        body = rng.sample(_GOOD, rng.randint(1, 3))
    elif rating == 3:
        body = rng.sample(_MIXED, 1) + rng.sample(_GOOD, rng.randint(0, 1))
    else:
        body = rng.sample(_BAD, rng.randint(1, 3))
    sentences = [rng.choice(_OPENERS), *body, rng.choice(_CLOSERS)]
    return " ".join(s.format(**slots) for s in sentences if s)


def generate(count: int, seed: int = 1) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """C{count} reviews over five years to 2026-11-15; a seed gives one data set."""
    rng = random.Random(seed)
    business = _business()
    newest = datetime.date(2026, 11, 15)
    reviews = []
    for number in range(count):
        rating = rng.choices([5, 4, 3, 2, 1], weights=[62, 16, 7, 5, 10])[0]
        day = newest - datetime.timedelta(days=rng.randrange(5 * 365))
        reply = None
        if rating <= 2 or rng.random() < 0.15:
            reply = {
                "text": "Thank you for telling us; we have followed up with the crew.",
                "date": (day + datetime.timedelta(days=rng.randint(0, 6))).isoformat(),
            }
        reviews.append(
            {
                "id": f"syn-{seed}-{number:07d}",
                "author": f"{rng.choice(_FIRST)} {chr(65 + rng.randrange(26))}.",
                "author_avatar_url": None,
                "rating": rating,
                "date": day.isoformat(),
                "text": None if rng.random() < 0.1 else _text(rng, rating, business),
                "source": rng.choice(["google", "google", "yelp", "facebook"]),
                "source_url": None,
                "owner_reply": reply,
                "verified": rng.random() > 0.02,
            }
        )
    return business, reviews


def write(directory: Path, count: int, seed: int = 1) -> Path:
    """A data directory with C{business.json} and C{reviews.jsonl}."""
    business, reviews = generate(count, seed)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "business.json").write_text(json.dumps(business, indent=2))
    with (directory / "reviews.jsonl").open("w") as f:
        for review in reviews:
            f.write(json.dumps(review) + "\n")
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    write(args.out, args.reviews, args.seed)
    print(f"{args.reviews} reviews in {args.out}")


if __name__ == "__main__":
    main()
