"""
Which technicians, services and places a text mentions: the reading rules
of reviewsd.data.mentions, each pinned with texts written for it, on a
small business of its own.
"""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.mentions import NOTHING, Found, Matcher, plural, slips
from reviewsd.data.model import business_from_json

BUSINESS: dict[str, Any] = {
    "name": "Test Builders",
    "service_areas": ["Tigard", "Lake Oswego"],
    "services": [
        {
            "id": "plumbing",
            "name": "Plumbing",
            "keywords": ["plumber", "faucet", "drain", "toilet", "water heater"],
        },
        {"id": "kitchen", "name": "Kitchen Remodeling", "keywords": ["kitchen"]},
        {"id": "bathroom", "name": "Bathroom Remodeling", "keywords": ["bathtub"]},
        {
            "id": "deck",
            "name": "Deck Building",
            "keywords": ["deck", "railing", "porch"],
        },
        {"id": "roofing", "name": "Roofing", "keywords": ["roof", "gutters"]},
        {"id": "windows", "name": "Windows & Doors", "keywords": ["window"]},
        {"id": "flooring", "name": "Flooring", "keywords": ["carpet", "hardwood"]},
        {"id": "painting", "name": "Painting", "keywords": ["paint", "painted"]},
        {"id": "electrical", "name": "Electrical", "keywords": ["GFCI", "outlet"]},
        {"id": "hvac", "name": "Heating", "keywords": ["furnace", "mini split"]},
        {
            "id": "restoration",
            "name": "Water Damage Restoration",
            "keywords": ["water damage", "dehumidifier"],
        },
        {
            "id": "handyman",
            "name": "Handyman",
            "keywords": ["handyman", "stair railing", "punch list"],
        },
    ],
    "technicians": [
        {"name": "Tomasz Nowak", "aliases": ["Tomasz", "Tom"]},
        {"name": "Michael Reyes", "aliases": ["Mike", "Mike R."]},
        {"name": "Sam Whitfield", "aliases": ["Sam"]},
        {"name": "Brandon Okafor", "aliases": ["Brandon"]},
        {"name": "Marcus Bell", "aliases": ["Marcus"]},
        {"name": "Marcos Ruiz", "aliases": ["Marcos"]},
    ],
}

MATCHER = Matcher(business_from_json(BUSINESS))


def services(text: str) -> set[str]:
    return set(MATCHER.find(text).services)


def technicians(text: str) -> set[str]:
    return set(MATCHER.find(text).technicians)


class WordTests(SynchronousTestCase):
    def test_whole_words_any_case(self) -> None:
        """Names and keywords are whole words or phrases, in any case."""
        self.assertEqual(
            MATCHER.find("MIKE R., our tech, fixed the Furnace in lake oswego."),
            Found(
                technicians=frozenset({"Michael Reyes"}),
                services=frozenset({"hvac"}),
                areas=frozenset({"Lake Oswego"}),
            ),
        )
        self.assertEqual(MATCHER.find("Tomorrow the roofers' samples came."), NOTHING)
        self.assertEqual(MATCHER.find(""), NOTHING)
        self.assertEqual(MATCHER.find(None), NOTHING)

    def test_plurals(self) -> None:
        """A keyword's regular plural names the service too."""
        self.assertEqual(services("Two other plumbers gave up on it."), {"plumbing"})
        self.assertEqual(services("Three mini splits, all quiet."), {"hvac"})
        self.assertEqual(services("Swapped both GFCIs in the garage."), {"electrical"})
        self.assertEqual(services("Every outlet works now."), {"electrical"})

    def test_plural_forms(self) -> None:
        self.assertEqual(plural("plumber"), "plumbers")
        self.assertEqual(plural("mini split"), "mini splits")
        self.assertEqual(plural("GFCI"), "GFCIs")
        self.assertEqual(plural("vanity"), "vanities")
        self.assertEqual(plural("bench"), "benches")
        self.assertIsNone(plural("gutters"))
        self.assertIsNone(plural("AC"))
        self.assertIsNone(plural("A/C"))


class PhraseTests(SynchronousTestCase):
    def test_longest_phrase_wins(self) -> None:
        """
        A keyword phrase of one service is not the shorter keyword of
        another inside it.
        """
        self.assertEqual(
            services("Brandon tightened the stair railing by the front hall."),
            {"handyman"},
        )
        self.assertEqual(services("New cedar railing along the steps."), {"deck"})

    def test_everyday_senses(self) -> None:
        """A trade word in an everyday phrase names no trade."""
        for text in [
            "They gave us a four-hour arrival window and missed it.",
            "Tech showed up way outside the service window.",
            "Lumber prices went through the roof that year.",
            "Honestly, the old company was money down the drain.",
            "They rolled out the red carpet for us.",
        ]:
            self.assertEqual(MATCHER.find(text).services, frozenset(), text)
        self.assertEqual(services("Rain came through the roof again."), {"roofing"})
        self.assertEqual(services("The window over the sink sticks."), {"windows"})

    def test_qualifier_is_not_the_service(self) -> None:
        """The kitchen faucet is plumbing; a bathtub drain too."""
        self.assertEqual(services("Tom swapped our kitchen faucet."), {"plumbing"})
        self.assertEqual(services("Bathtub drain was slow for months."), {"plumbing"})
        self.assertEqual(services("New kitchen window, no drafts."), {"windows"})
        self.assertEqual(services("The kitchen looks amazing."), {"kitchen"})


class SidelineTests(SynchronousTestCase):
    def test_a_place_gives_way(self) -> None:
        """
        A keyword named as the place where something happened counts only
        when no other service is named outright.
        """
        self.assertEqual(
            services("He cleared the clogged drain in our upstairs bathtub."),
            {"plumbing"},
        )
        self.assertEqual(
            services("The painters dripped paint on the carpet in two rooms."),
            {"painting"},
        )
        self.assertEqual(
            services(
                "We've been showering at the gym and doing dishes in the "
                "bathtub while the kitchen drags on."
            ),
            {"kitchen"},
        )
        # alone, the place is all there is to go on
        self.assertEqual(services("The leak in the roof is finally gone."), {"roofing"})
        self.assertEqual(services("Crew took breaks on our porch."), {"deck"})

    def test_work_on_is_not_a_place(self) -> None:
        """ "A great job on the deck" says what the work was on."""
        self.assertEqual(
            services("Great job on our deck, and they cleaned the gutters."),
            {"deck", "roofing"},
        )
        self.assertEqual(
            services("They put in new hardwood and painted the trim."),
            {"flooring", "painting"},
        )

    def test_what_got_damaged_or_worked_on(self) -> None:
        """
        What got damaged or spared, what the customer was left with, and
        what another service's work was done on give way too.
        """
        self.assertEqual(
            services(
                "The washer hose flooded our kitchen; two dehumidifiers "
                "ran for three days."
            ),
            {"restoration"},
        )
        self.assertEqual(
            services("Dehumidifier in by noon and it saved our carpet."),
            {"restoration"},
        )
        self.assertEqual(
            services(
                "They patched the roof badly and now we have water damage in the attic."
            ),
            {"roofing"},
        )
        self.assertEqual(services("Sam painted the kitchen in a day."), {"painting"})

    def test_what_water_got_into(self) -> None:
        """What water got into is the damage; the restoration is the work."""
        self.assertEqual(
            services("Found wet hardwood under the sink and set up a dehumidifier."),
            {"restoration"},
        )
        self.assertEqual(services("The new hardwood looks great."), {"flooring"})

    def test_items_of_a_job_list(self) -> None:
        """
        The items of a list that a service named outright heads are its
        parts, not services of their own.
        """
        self.assertEqual(
            services(
                "Booked a handyman visit: a loose outlet cover, a running toilet "
                "and some paint touch-ups. Done by noon."
            ),
            {"handyman"},
        )
        # without a heading, each is named
        self.assertEqual(
            services("Two visits: a loose outlet and a running toilet."),
            {"electrical", "plumbing"},
        )
        # and the list ends with its sentence
        self.assertEqual(
            services(
                "Handyman visit: a loose outlet cover. Later they redid the roof."
            ),
            {"handyman", "roofing"},
        )

    def test_what_failed_gives_way_to_the_work(self) -> None:
        """What failed is the cause: the work on it, unless other work is named."""
        self.assertEqual(
            services(
                "After the upstairs toilet overflowed they handled the water damage."
            ),
            {"restoration"},
        )
        self.assertEqual(
            services("Our water heater died on Sunday and they replaced it."),
            {"plumbing"},
        )
        self.assertEqual(
            services("The toilet overflowed into the bathtub below."),
            {"plumbing"},
        )


class PeopleTests(SynchronousTestCase):
    def test_someone_elses_person(self) -> None:
        """A name right after a word for the customer's own people is theirs."""
        for text in [
            "My neighbor Mike told us about them.",
            "Our neighbour, Mike, swears by them.",
            "My brother-in-law Sam checked the quote and said it was fair.",
            "Sam (my cousin) recommended them.",
            "Mike, my neighbor, had them do his roof.",
        ]:
            self.assertEqual(MATCHER.find(text).technicians, frozenset(), text)

    def test_that_name_throughout_the_text(self) -> None:
        """The same name later in the text is still that person."""
        self.assertEqual(
            technicians("My friend Tom found them. Tom was right, Brandon was great."),
            {"Brandon Okafor"},
        )
        # another of the technician's names is the technician
        self.assertEqual(
            technicians("My neighbor Mike found them, and Mike R. did the work."),
            {"Michael Reyes"},
        )

    def test_colleagues_are_technicians(self) -> None:
        self.assertEqual(
            technicians("Mike and his helper Brandon installed the furnace."),
            {"Michael Reyes", "Brandon Okafor"},
        )


class NameTests(SynchronousTestCase):
    def test_first_name(self) -> None:
        """The first word of a full name is an alias, when no one else's."""
        self.assertEqual(technicians("Michael was on time."), {"Michael Reyes"})
        two = Matcher(
            business_from_json(
                {
                    "name": "Two Sams",
                    "technicians": [{"name": "Sam Lee"}, {"name": "Sam Ortiz"}],
                }
            )
        )
        self.assertEqual(two.find("Sam was on time."), NOTHING)
        self.assertEqual(
            two.find("Sam Ortiz was on time.").technicians, frozenset({"Sam Ortiz"})
        )

    def test_one_slip_in_a_long_name(self) -> None:
        """A missing, extra, wrong or swapped letter in a long name."""
        for text, name in [
            ("Tomaz did the whole job himself.", "Tomasz Nowak"),
            ("Thanks, Tomas!", "Tomasz Nowak"),
            ("Huge thanks to Tommasz.", "Tomasz Nowak"),
            ("Brnadon was great.", "Brandon Okafor"),
            ("Micheal fixed the furnace.", "Michael Reyes"),
            ("tomas did great, thx", "Tomasz Nowak"),
            ("Tomas's crew was tidy.", "Tomasz Nowak"),
        ]:
            self.assertEqual(technicians(text), {name}, text)

    def test_no_slip_where_it_would_mislead(self) -> None:
        """
        Not in a short name, not in the first letter, not when two names
        are a slip away, not a lower-case word in a text with capitals.
        """
        self.assertEqual(technicians("Sal was late."), set())  # Sam: too short
        self.assertEqual(technicians("Romasz was late."), set())  # first letter
        self.assertEqual(technicians("Marcas was late."), set())  # Marcus? Marcos?
        self.assertEqual(technicians("Marcus was on time."), {"Marcus Bell"})
        self.assertEqual(technicians("Marcos was on time."), {"Marcos Ruiz"})
        self.assertEqual(technicians("The tomas were ripe. Great job!"), set())
        self.assertEqual(technicians("My neighbor Tomas hired them too."), set())

    def test_slips(self) -> None:
        found = slips("tomasz")
        self.assertIn("tomas", found)  # missing
        self.assertIn("tommasz", found)  # extra
        self.assertIn("tomesz", found)  # wrong
        self.assertIn("toamsz", found)  # swapped
        self.assertNotIn("tomasz", found)
        self.assertNotIn("romasz", found)  # never the first letter
        self.assertNotIn("omasz", found)

    def test_called(self) -> None:
        """Look-ups by name, alias, id or service name are unchanged."""
        self.assertEqual(MATCHER.technicians_called("mike r."), {"Michael Reyes"})
        self.assertEqual(MATCHER.technicians_called("Michael"), frozenset())
        self.assertEqual(MATCHER.services_called("PLUMBING"), {"plumbing"})
