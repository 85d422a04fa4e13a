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

DEMO = Path(__file__).resolve().parent.parent / "reviewsd" / "demo" / "business.json"

_GOOD = [
    "{tech} showed up right on time and got straight to work.",
    "The price was fair and matched the written quote exactly.",
    "They cleaned up every bit of dust and even swept the driveway.",
    "Great communication, we got a text before each visit.",
    "The {service} looks fantastic, really careful workmanship.",
    "{tech} explained every option without any pressure.",
    "Honest, friendly and professional from start to finish.",
    "Scheduling was easy and they fit us in the same week.",
    "Our {service} has worked perfectly since, no leaks at all.",
    "You can tell {tech} knows the trade inside out.",
]
_BAD = [
    "{tech} was two hours late and never called ahead.",
    "The final bill was way over the quote with hidden fees.",
    "They left debris and dust all over the living room.",
    "Nobody returned my calls for a week.",
    "The {service} started leaking again a month later.",
    "Sloppy work on the {service}, we had to have it redone.",
    "They rescheduled three times and then did not show up.",
    "{tech} seemed unsure how to fix it and guessed at the problem.",
]
_MIXED = [
    "Good work on the {service}, though it took longer than promised.",
    "{tech} did fine but the scheduling was a mess.",
    "Decent job overall, a bit pricey for what it was.",
]
_OPENERS = [
    "We hired them for our {service} here in {area}.",
    "Called about the {service} last month.",
    "Second time using this company.",
    "Needed help with the {service} after a storm.",
    "",
]
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
    def fill(template: str) -> str:
        technician = rng.choice(business["technicians"])
        service = rng.choice(business["services"])
        return template.format(
            tech=rng.choice([technician["name"], *technician["aliases"]]),
            service=rng.choice([service["name"].lower(), *service["keywords"]]),
            area=rng.choice(business["service_areas"]),
        )

    pool = _GOOD if rating >= 4 else _BAD if rating <= 2 else _GOOD + _BAD + _MIXED
    sentences = [fill(rng.choice(_OPENERS))]
    sentences += [fill(s) for s in rng.sample(pool, rng.randint(1, 4))]
    return " ".join(s for s in sentences if s)


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
