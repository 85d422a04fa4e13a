"""
Which technicians, services and places a text mentions: the reading rules
of reviewsd.data.mentions, each pinned with texts written for it, on a
small business of its own, read by the rules alone (referrals.RULES); the
trained referrals model on top of them is tested in test_referrals.
"""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from reviewsd.data.mentions import (
    NOTHING,
    Found,
    Matcher,
    doubled,
    plural,
    redone,
    separated,
    singular,
    slips,
)
from reviewsd.data.model import business_from_json
from reviewsd.data.referrals import RULES

BUSINESS: dict[str, Any] = {
    "name": "Test Builders",
    "service_areas": ["Tigard", "Lake Oswego"],
    "services": [
        {
            "id": "plumbing",
            "name": "Plumbing",
            "keywords": [
                "plumber",
                "faucet",
                "drain",
                "toilet",
                "water heater",
                "shutoff valve",
                "valve",
            ],
        },
        {
            "id": "kitchen",
            "name": "Kitchen Remodeling",
            "keywords": ["kitchen", "cabinets"],
        },
        {
            "id": "bathroom",
            "name": "Bathroom Remodeling",
            "keywords": ["bathtub", "shower"],
        },
        {
            "id": "deck",
            "name": "Deck Building",
            "keywords": ["deck", "railing", "porch"],
        },
        {"id": "roofing", "name": "Roofing", "keywords": ["roof", "gutters"]},
        {
            "id": "windows",
            "name": "Windows & Doors",
            "keywords": ["window", "front door"],
        },
        {"id": "flooring", "name": "Flooring", "keywords": ["carpet", "hardwood"]},
        {
            "id": "painting",
            "name": "Painting",
            "keywords": ["paint", "painted", "drywall"],
        },
        {"id": "electrical", "name": "Electrical", "keywords": ["GFCI", "outlet"]},
        {"id": "hvac", "name": "Heating", "keywords": ["furnace", "mini split"]},
        {
            "id": "restoration",
            "name": "Water Damage Restoration",
            "keywords": ["water damage", "dehumidifier", "flooded", "flood"],
        },
        {
            "id": "handyman",
            "name": "Handyman",
            "keywords": [
                "handyman",
                "stair railing",
                "punch list",
                "sticking door",
                "weatherstripping",
            ],
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

MATCHER = Matcher(business_from_json(BUSINESS), RULES)


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


class ReadingTests(SynchronousTestCase):
    def test_more_everyday_senses(self) -> None:
        """A window of time, a flood of calls, a shower taken name no trade."""
        for text in [
            "Took the day off for the 8-12 window and nobody came.",
            "They gave us a 2 hour window and kept to it.",
            "After a flood of calls and emails, someone answered.",
            "The owner hit the roof when he saw the mess.",
            "Hot water lasts for two showers in a row now.",
        ]:
            self.assertEqual(MATCHER.find(text).services, frozenset(), text)
        self.assertEqual(services("They replaced 4-5 windows in a day."), {"windows"})
        self.assertEqual(services("The new shower is great."), {"bathroom"})

    def test_where_the_crew_only_was(self) -> None:
        """A place where the crew only was names no work, unless new."""
        for text in [
            "The crew smoked on our porch all afternoon.",
            "They left a hanger on our front door and billed a trip fee.",
        ]:
            self.assertEqual(MATCHER.find(text).services, frozenset(), text)
        self.assertEqual(services("They left trash on our new deck."), {"deck"})

    def test_what_water_got_into_and_what_was_torn_out(self) -> None:
        """The wet carpet and the drywall cut back are the restoration's."""
        self.assertEqual(
            services(
                "They ran a dehumidifier for a week, but the carpet in the "
                "corner was squishing again."
            ),
            {"restoration"},
        )
        self.assertEqual(
            services("They cut the drywall back two feet and set a dehumidifier."),
            {"restoration"},
        )
        # alone, what was torn out is still the work
        self.assertEqual(services("They removed the old carpet. Great!"), {"flooring"})

    def test_stages_and_what_work_left(self) -> None:
        """A stage of a larger job, or its dust, is not another trade's work."""
        self.assertEqual(
            services("Our kitchen came out great, right up to the final paint."),
            {"kitchen"},
        )
        self.assertEqual(
            services("From demo to the last coat of paint, the kitchen took a month."),
            {"kitchen"},
        )
        self.assertEqual(
            services("New GFCI in the garage, but drywall dust all over the car."),
            {"electrical"},
        )
        self.assertEqual(services("The painted trim looks sharp."), {"painting"})

    def test_a_room_where_another_trade_worked(self) -> None:
        """The kitchen lights are where the electrical work was."""
        self.assertEqual(
            services("Marcus rewired the kitchen lights and added an outlet."),
            {"electrical"},
        )
        self.assertEqual(services("The kitchen lights are gorgeous."), {"kitchen"})

    def test_a_trade_in_passing(self) -> None:
        """A trade named in passing within a larger job is not its work."""
        self.assertEqual(
            services(
                "Every week a new excuse about the cabinets or the plumber, and "
                "our kitchen is still not done."
            ),
            {"kitchen"},
        )
        self.assertEqual(
            services("The plumber fixed our kitchen faucet."), {"plumbing"}
        )

    def test_harm_done(self) -> None:
        """Water their bad work let in is harm, not the restoration work."""
        self.assertEqual(
            services("They botched our roof and it flooded the attic."),
            {"roofing"},
        )
        self.assertEqual(
            services("Water damage from their sloppy roof job, and no callback."),
            {"roofing"},
        )
        self.assertEqual(
            services("The washer flooded our basement; they had it dry in days."),
            {"restoration"},
        )

    def test_a_kind_of_part_not_listed(self) -> None:
        """
        A one-word keyword that ends a longer one of its service, with a word
        of another kind before it, is a part of something else.
        """
        self.assertEqual(
            services("Hana serviced the furnace and showed us the bleed valves."),
            {"hvac"},
        )
        self.assertEqual(
            services("Serviced the furnace and swapped the old valve too."),
            {"hvac", "plumbing"},
        )
        self.assertEqual(services("A new shutoff valve, no leaks."), {"plumbing"})

    def test_small_jobs(self) -> None:
        """A list of small jobs across trades is the handyman's alone."""
        self.assertEqual(
            services(
                "Sam fixed two sticking doors, patched a hole in the hall and "
                "tightened our wobbly railing."
            ),
            {"handyman"},
        )
        self.assertEqual(
            services(
                "Sam fixed a dripping faucet, swapped a loose outlet and patched "
                "the paint in the hall."
            ),
            {"handyman"},
        )
        # bigger jobs across trades stay theirs
        self.assertEqual(
            services("They replaced our furnace, water heater and a GFCI in a week."),
            {"hvac", "plumbing", "electrical"},
        )

    def test_catch_all_items_within_a_job(self) -> None:
        """The handyman's items within another service's job are its parts."""
        self.assertEqual(
            services("New front door went in and the weatherstripping seals tight."),
            {"windows"},
        )
        self.assertEqual(
            services("Sam redid the weatherstripping on two doors."), {"handyman"}
        )
        self.assertEqual(
            services("The handyman redid the weatherstripping by the new window."),
            {"handyman", "windows"},
        )

    def test_singular_of_a_plural_keyword(self) -> None:
        self.assertEqual(services("One cabinet door sticks."), {"kitchen"})
        self.assertEqual(singular("cabinets"), "cabinet")
        self.assertEqual(singular("gutters"), "gutter")
        self.assertIsNone(singular("floors"))
        self.assertIsNone(singular("shelves"))
        self.assertIsNone(singular("hardwood"))

    def test_other_people_and_places(self) -> None:
        """Pets, namesakes, other surnames and streets are not ours."""
        for text, found in [
            (
                "Our dog Sam barked the whole time; Brandon didn't mind.",
                {"Brandon Okafor"},
            ),
            (
                "A friend at church, also named Tomasz, sent us to Brandon.",
                {"Brandon Okafor"},
            ),
            (
                "Sam Smith from the city signed off on Brandon's work.",
                {"Brandon Okafor"},
            ),
            ("Sam Whitfeld was great.", {"Sam Whitfield"}),
            ("Thanks Sam Great job", {"Sam Whitfield"}),
        ]:
            self.assertEqual(technicians(text), found, text)
        self.assertEqual(
            MATCHER.find("We live on Tigard Street in Lake Oswego.").areas,
            frozenset({"Lake Oswego"}),
        )


def _more_business() -> dict[str, Any]:
    """L{BUSINESS} with keywords that two services share, or that a phrasal
    verb, a room's fittings or a time of heating name."""
    more = {
        "plumbing": ["burst pipe"],
        "restoration": ["burst pipe", "dried out"],
        "hvac": ["heating", "thermostat"],
        "kitchen": ["counters"],
        "electrical": ["wiring"],
        "bathroom": ["tub"],
    }
    return {
        **BUSINESS,
        "services": [
            {**s, "keywords": [*s["keywords"], *more.get(s["id"], [])]}
            for s in BUSINESS["services"]
        ],
    }


MORE = Matcher(business_from_json(_more_business()), RULES)


def more_services(text: str) -> set[str]:
    return set(MORE.find(text).services)


class MoreReadingTests(SynchronousTestCase):
    def test_phrases_written_with_hyphens(self) -> None:
        """A keyword phrase is found with its words joined by a hyphen."""
        self.assertEqual(
            more_services("The dried-out wall tested clean."), {"restoration"}
        )
        self.assertEqual(services("A new mini-split upstairs."), {"hvac"})

    def test_phrasal_verb_with_its_object_between(self) -> None:
        """ "Dried it out" is "dried out"."""
        self.assertEqual(
            more_services("They dried it out in three days."), {"restoration"}
        )
        self.assertEqual(
            separated("dried out"),
            ["dried it out", "dried them out", "dried everything out"],
        )
        self.assertEqual(separated("water heater"), [])
        self.assertEqual(separated("dry out the basement"), [])

    def test_a_keyword_two_services_share(self) -> None:
        """
        A keyword two services list counts for the one another keyword names
        alone, when one does.
        """
        self.assertEqual(
            more_services("After a burst pipe they ran a dehumidifier for a week."),
            {"restoration"},
        )
        self.assertEqual(
            more_services("Fixed the burst pipe and the faucet."), {"plumbing"}
        )
        self.assertEqual(
            more_services("Burst pipe at midnight, Tom was here by one."),
            {"plumbing", "restoration"},
        )

    def test_more_everyday_senses(self) -> None:
        """A time window said after the word, a heating bill, a permit counter."""
        self.assertEqual(
            services("The window was 8-12 and he came at 2, but the furnace works."),
            {"hvac"},
        )
        self.assertEqual(services("Our window is 9 am to noon."), set())
        self.assertEqual(
            more_services("New windows, and our heating bill is down a third."),
            {"windows"},
        )
        self.assertEqual(
            more_services(
                "Sam knew the code better than the guy at the permit counter."
            ),
            set(),
        )
        self.assertEqual(more_services("The new counter is quartz."), {"kitchen"})

    def test_approval_is_said_of_the_work(self) -> None:
        """What an inspector signed off on is the work."""
        self.assertEqual(
            services(
                "The inspector signed off on the deck, and they painted the trim."
            ),
            {"deck", "painting"},
        )

    def test_what_is_no_worker(self) -> None:
        """
        A verb of work is no work after a speck or a pipe that let go: what
        it got on, or gave way under, is a place.
        """
        self.assertEqual(
            services("Not a speck got on our carpet while they hung the front door."),
            {"windows"},
        )
        self.assertEqual(
            services("The faucet let go over the bathtub at midnight."), {"plumbing"}
        )
        self.assertEqual(
            services("Everything went on the new carpet perfectly."), {"flooring"}
        )

    def test_torn_out_said_after(self) -> None:
        """Drywall left cut out after a flood is the restoration's."""
        self.assertEqual(
            services("Our drywall sat cut out for a month after the flood."),
            {"restoration"},
        )
        self.assertEqual(
            services("The drywall was ripped out after the flood."), {"restoration"}
        )
        self.assertEqual(services("They painted the new drywall."), {"painting"})

    def test_what_the_customer_got_in(self) -> None:
        """What the customer rented themselves is not the work."""
        self.assertEqual(
            services("We rented a dehumidifier until the plumber came."),
            {"plumbing"},
        )

    def test_a_thing_that_only_sat(self) -> None:
        """A fixture that sat in the way during a remodel is not its trade's."""
        self.assertEqual(
            services(
                "The toilet sat in the garage for a week while they tiled the shower."
            ),
            {"bathroom"},
        )
        self.assertEqual(
            services("Our toilet spent ten days sitting in the hallway."), {"plumbing"}
        )

    def test_rot_is_a_failure(self) -> None:
        """What was rotten is the cause of the work, which is named outright."""
        self.assertEqual(
            services("Tom redid the roof, and the deck under it was rotten."),
            {"roofing"},
        )
        self.assertEqual(
            services("Our deck was rotting, so they rebuilt it."), {"deck"}
        )

    def test_new_work_gone_wrong(self) -> None:
        """New floors buckling are the flooring, not water's doing; "by" a
        door is a place."""
        self.assertEqual(
            services("New hardwood started buckling by the front door."), {"flooring"}
        )
        self.assertEqual(
            services("The hardwood started buckling after the flood."), {"restoration"}
        )

    def test_other_firms_trades(self) -> None:
        """Two plumbers, another roofer: other firms' people, in passing."""
        self.assertEqual(
            services("Two plumbers couldn't find the leak. Sam replaced the gutters."),
            {"roofing"},
        )
        self.assertEqual(
            services("We paid another plumber, and Tom fixed the roof."), {"roofing"}
        )
        self.assertEqual(services("The plumber was great."), {"plumbing"})

    def test_more_objects_of_another_trade(self) -> None:
        """
        The items of a list another trade worked on, and what its work was
        for, are its objects.
        """
        self.assertEqual(services("They painted the trim and gutters."), {"painting"})
        self.assertEqual(
            more_services("Tom ran new wiring for the kitchen."), {"electrical"}
        )
        # for a job is for that job, which counts
        self.assertEqual(
            more_services("Tom ran new wiring for the kitchen remodel."),
            {"electrical", "kitchen"},
        )
        self.assertEqual(
            services("They painted the trim and replaced the gutters."),
            {"painting", "roofing"},
        )

    def test_asked_about(self) -> None:
        """What the customer only asked about is not the work."""
        self.assertEqual(
            services("While he fixed the outlet I asked him about our water heater."),
            {"electrical"},
        )

    def test_short_name_with_a_letter_doubled(self) -> None:
        """A short name is found with one letter written twice."""
        self.assertEqual(technicians("Mikke fixed the furnace."), {"Michael Reyes"})
        self.assertEqual(technicians("Mkie fixed the furnace."), set())
        self.assertEqual(doubled("hana"), {"haana", "hanna", "hanaa"})


class EverydayWordingTests(SynchronousTestCase):
    def test_states_and_things_that_are_no_work(self) -> None:
        """
        A window painted shut, a hot tub and an install window name no
        work.
        """
        self.assertEqual(
            services("The old windows were painted shut, so Sam replaced them."),
            {"windows"},
        )
        self.assertEqual(
            more_services("Soft spot in the deck by the hot tub."), {"deck"}
        )
        self.assertEqual(more_services("We love the new tub."), {"bathroom"})
        self.assertEqual(
            services("New cabinets look great but the install window kept moving."),
            {"kitchen"},
        )

    def test_what_came_through_unharmed(self) -> None:
        """What survived or was saved was not worked on."""
        self.assertEqual(
            services("My carpet survived a full bathtub swap."), {"bathroom"}
        )
        self.assertEqual(
            services("The dehumidifier ran all week. Floors were saved."),
            {"restoration"},
        )
        self.assertEqual(services("Our new roof survived the storm."), {"roofing"})
        self.assertEqual(services("The plumber saved the day."), {"plumbing"})

    def test_toward_is_a_place(self) -> None:
        """What water runs toward is a place."""
        self.assertEqual(
            services("The shower is perfect, the water runs toward the drain now."),
            {"bathroom"},
        )

    def test_work_another_firm_did(self) -> None:
        """
        Work done by another contractor, and a trade's person the customer
        paid or hired, are another firm's.
        """
        self.assertEqual(
            services(
                "Tom moved the drain. The kitchen itself was done by another "
                "contractor."
            ),
            {"plumbing"},
        )
        self.assertEqual(
            services("Sam fixed the outlet and we paid a plumber to fix the leak."),
            {"electrical"},
        )
        self.assertEqual(
            services("Tom fixed the outlet, then we had to hire a plumber."),
            {"electrical"},
        )
        self.assertEqual(services("Their plumber was great."), {"plumbing"})

    def test_a_name_told_apart(self) -> None:
        """
        A name told apart from another who bears it ("different Tom") leaves
        the technician its other mentions.
        """
        self.assertEqual(
            technicians("Tom fixed the roof. Neighbor Tom (different Tom) called."),
            {"Tomasz Nowak"},
        )
        self.assertEqual(technicians("My neighbor Tom fixed the roof."), set())
        self.assertEqual(
            technicians("My neighbor Tom said a different Tom came."), set()
        )

    def test_the_second_item_of_a_place(self) -> None:
        """
        The second item of a place, each with its determiner, is a place
        too; not after a verb of work, nor an item without a determiner.
        """
        self.assertEqual(
            services("They painted right over the outlet covers and a window latch."),
            {"painting"},
        )
        self.assertEqual(
            services("They painted over the outlet and added a window."),
            {"painting", "windows"},
        )
        self.assertEqual(
            services("Tom put in the outlet and the window."), {"electrical", "windows"}
        )

    def test_what_failed_then_mended(self) -> None:
        """What failed counts beside the work named outright once it is mended."""
        self.assertEqual(
            services("The toilet overflowed. Tom fixed it and painted the drywall."),
            {"plumbing", "painting"},
        )
        self.assertEqual(
            services("The toilet overflowed, so Tom painted the drywall."), {"painting"}
        )
        self.assertEqual(
            services(
                "The water heater let go. Old tank out and new one in, and a "
                "dehumidifier ran all week."
            ),
            {"plumbing", "restoration"},
        )

    def test_a_result_of_the_work(self) -> None:
        """
        What a thing no longer does, or has no more of, is a result of the
        work named, and counts only alone.
        """
        self.assertEqual(
            services("The new bathtub is in and the faucet doesn't drip."),
            {"bathroom"},
        )
        self.assertEqual(
            services("New gutters, looks sharp and no more clogged drain."),
            {"roofing"},
        )
        self.assertEqual(
            services("Tom came and the faucet doesn't drip."), {"plumbing"}
        )

    def test_a_keyword_done_again(self) -> None:
        """
        A keyword that is another keyword done again is found in its
        participles too; other keywords are not.
        """
        self.assertEqual(
            redone("reroof", ["roof", "reroof"]), ["reroofed", "reroofing"]
        )
        self.assertEqual(redone("re-pipe", ["pipe"]), ["re-piped", "re-piping"])
        self.assertEqual(redone("rewired", ["wired", "rewired"]), [])
        self.assertEqual(redone("restoration", ["restoration"]), [])
        redo = Matcher(
            business_from_json(
                {
                    **BUSINESS,
                    "services": [
                        {
                            "id": "roofing",
                            "name": "Roofing",
                            "keywords": ["roof", "reroof"],
                        }
                    ],
                }
            ),
            RULES,
        )
        self.assertEqual(
            set(redo.find("Tom and his crew reroofed our house.").services), {"roofing"}
        )
        self.assertEqual(
            set(redo.find("They are reroofing the garage.").services), {"roofing"}
        )
