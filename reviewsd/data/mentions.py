"""
Which technicians, services and places a text mentions.

One matcher for search filters, insights and MCP lookups: names, aliases and
keywords are found as whole words or phrases, case-insensitively, so that
C{Dev} is not found in C{Devastated} and C{Mike R.} is found before a comma.
The words of a phrase may be joined by a hyphen (C{dried-out}), and a
phrasal verb's may hold a short object (C{dried it out}).

A word is not always the trade it names, and a person is not always the
technician, so a few rules of reading come on top:

  - the longest phrase wins: C{stair railing} (a keyword of one service)
    is not the C{railing} of another, and in the everyday phrases of
    L{EVERYDAY_SENSES} (C{arrival window}, C{money down the drain}, C{hot
    tub}, C{painted shut}) a trade word names no trade at all;
  - a keyword that only qualifies another service's keyword names a place
    or a part, not the work: the C{kitchen faucet} is plumbing;
  - a keyword named as the place where something happened (C{the drain in
    our bathroom}, C{paint on the carpet}, C{buckling by the sliding door}
    unless it is new, C{over the outlet covers and a window latch}), as
    what got damaged (C{flooded our kitchen}, C{wet drywall}, C{now we
    have water damage}), as what another service's work was done on or
    for (C{painted the kitchen}, C{repainted the trim and fascia}, C{a
    circuit for the kitchen island}) or as an item of a list another
    service heads (C{handyman day: shelves, a faucet}) counts only when
    the text names no service outright or as what failed (C{the toilet
    overflowed}, C{the decking is rotten}), which in turn counts only when
    no service is named outright or the text says it was mended (C{a pipe
    burst in the wall ... fixed it}); what a verb of work was done on is
    no place (C{a great job on our deck}), unless the verb's subject is a
    speck or a failure (C{not a speck got on our floors}, C{a pipe let go
    under the vanity});
  - a keyword also counts only when no service is named outright, or not
    at all, when read as: a window of time (C{the 8-12 window}, C{the
    window was 8-12}); a place where the crew only was (C{smoked on our
    porch}); what water got into (C{the carpet was squishing again}),
    unless new (C{new floors started buckling}); what came through unharmed
    (C{floors were saved}, C{my carpet survived}); a result of the work
    (C{the faucet doesn't drip}, C{no more clogs}); what was torn out (C{cut
    the drywall back}, C{drywall cut out}); what only sat in the way (C{the
    toilet sat in the hallway}); what the customer rented (C{rented fans
    drying out the hallway}) or only asked about (C{asked him about our
    water heater}); a stage of a larger job (C{the final coat of paint});
    what work left behind (C{drywall dust}); a room where another trade
    worked (C{the kitchen lighting}); a trade named in passing (C{an excuse
    about the plumber}) or as another firm's (C{two roofers}, C{another
    plumber}, C{we paid a painter}, C{the kitchen was done by another
    contractor}); harm done or its cause (C{it flooded our basement}, C{water
    damage from their install}); a kind of part the service does not list
    (C{the reversing valve}, where it lists C{shutoff valve});
  - small jobs go to the catch-all service (the one called handyman): the
    other trades of a sentence listing three jobs or more, one of them its
    (C{fixed two sticking doors, patched a hole and tightened the
    railing}), or three small fixes or more across three trades, are its
    items; its own items (C{weatherstripping}) within another service's job
    are that job's parts, unless the text names the catch-all itself;
  - a keyword that several services list (C{burst pipe}) counts for those
    of them another keyword names alone, when some are;
  - a service keyword's plural is found too (C{plumbers}, C{mini splits}),
    a long plural keyword's singular (C{cabinet}), and the participles of
    one that is another keyword done again (C{reroofed}, for C{reroof}
    where C{roof} is one);
  - a name right after a word for the customer's own people (C{my neighbor
    Mike}, C{Sam, my cousin}, C{our dog Rosa}, C{also named Tomasz}) is that
    person, throughout the text (unless the text tells the two apart:
    C{Neighbor Tom (different Tom)}), and so is a first name followed by a
    surname its technician does not bear (C{Sam Smith});
  - a place followed by a word for a street (C{Tigard Street}) is not the
    place;
  - the first word of a technician's full name, when no other technician's
    name starts with it and it is no other term, is an alias too; a name or
    alias of L{TYPO_MIN} letters or more is found with one typing slip (a
    letter missing, extra, wrong or two swapped, never the first) when no
    other technician's is one slip away and the word is written with a
    capital (or the whole text in lower case); a shorter one, of
    L{DOUBLED_MIN} letters or more, with a letter written twice (C{Hanna}),
    on the same terms.

What the rules keep is then weighed by a trained model of the words around
each keyword and of the whole text (L{reviewsd.data.referrals}), which
drops the services named only in passing in ways no rule spells out ("the
shower kept going lukewarm until Tom replaced the mixing valve" is
plumbing, not a bathroom remodel).

The rules cost a few microseconds a text: terms and word lists are matched
as character tries, and the words before a keyword are read backwards,
anchored at the keyword.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from functools import lru_cache
from itertools import repeat
from typing import Any

from attrs import frozen

from reviewsd.data.model import Business
from reviewsd.data.referrals import REFERRALS_DIGEST, Keywords, Referrals, shipped


@frozen
class Found:
    """What one text mentions: technician names, service ids, place names."""

    technicians: frozenset[str]
    services: frozenset[str]
    areas: frozenset[str]


NOTHING = Found(frozenset(), frozenset(), frozenset())

MATCHING_REVISION = f"7-referrals-{REFERRALS_DIGEST[:16]}"
"""
Changed whenever the rules below or the weights of L{reviewsd.data.referrals}
change what is found for the same terms: mentions cached under other rules
are then found again.
"""

#: Everyday phrases in which a word a business may list as a service
#: keyword names no trade: they are matched like terms, and so hide the
#: keywords inside them, but mention nothing.
EVERYDAY_SENSES = (
    # a window of time
    "arrival window",
    "time window",
    "window of time",
    "hour window",
    "appointment window",
    "delivery window",
    "service window",
    "scheduling window",
    "install window",
    "installation window",
    "window between",
    "out the window",
    # money and plans gone
    "money down the drain",
    "circling the drain",
    "pipe dream",
    "went through the roof",
    "go through the roof",
    "goes through the roof",
    "is through the roof",
    "was through the roof",
    "are through the roof",
    "were through the roof",
    "took a bath",
    # other figures of speech
    "under one roof",
    "under the same roof",
    "roof over our heads",
    "all hands on deck",
    "deck of cards",
    "break the mold",
    "breaks the mold",
    "broke the mold",
    "broken the mold",
    "deal breaker",
    "deal-breaker",
    "tie breaker",
    "ice breaker",
    "red carpet treatment",
    "rolled out the red carpet",
    "swept under the carpet",
    "paint a picture",
    "painted a picture",
    "paints a picture",
    "off the shelf",
    "off-the-shelf",
    "shelf life",
    "sink or swim",
    "everything but the kitchen sink",
    "creative outlet",
    "news outlet",
    "outlet mall",
    "baby shower",
    "hit the roof",
    "hits the roof",
    "hitting the roof",
    "raise the roof",
    "raised the roof",
    "roof of my mouth",
    "window of opportunity",
    "morning window",
    "afternoon window",
    "narrow window",
    "tight window",
    "flood of calls",
    "flood of phone calls",
    "flood of emails",
    "flood of texts",
    "flood of messages",
    "flood of complaints",
    "flood of reviews",
    "flood of questions",
    "flood of requests",
    "flood of excuses",
    "flood of apologies",
    "in hot water",
    "duct tape",
    "duct-tape",
    "duct taped",
    "duct-taped",
    "leaf blower",
    "snow blower",
    "top shelf",
    "top-shelf",
    "hinges on",
    "hinged on",
    "watching paint dry",
    "watch paint dry",
    "bridal shower",
    "flooded with calls",
    "flooded with requests",
    "flooded with work",
    "flooded with jobs",
    "flooded with orders",
    "flooded with emails",
    "went down the drain",
    "gone down the drain",
    "going down the drain",
    "tub of",
    "restoration of my faith",
    "restoration of faith",
    "heating up",
    "over the counter",
    "behind the counter",
    "at the counter",
    "front counter",
    "counter offer",
    "counter-offer",
    "permit counter",
    "parts counter",
    "service counter",
    "checkout counter",
    "sales counter",
    # what heating costs, not work on it
    "heating bill",
    "heating bills",
    "heating cost",
    "heating costs",
    "cooling bill",
    "cooling bills",
    "cooling costs",
    "medicine cabinet",
    "filing cabinet",
    "file cabinet",
    "liquor cabinet",
    # a wash, not the fixture
    "take a shower",
    "took a shower",
    "taking a shower",
    "take showers",
    "hot shower",
    "hot showers",
    "long shower",
    "long showers",
    "cold shower",
    "cold showers",
    "showers in a row",
    "showers back to back",
    # things at a place, not the work on it
    "kitchen table",
    "porch light",
    "flashing lights",
    "flashing light",
    "toilet paper",
    "hot tub",
    "hot tubs",
    # a state, not the work
    "painted shut",
)


#: Words for a person of the customer's, not the business's: a name right
#: after one of them (and that name anywhere else in the text) is theirs.
#: Not the words a technician's own colleague goes by (partner, boss,
#: helper), nor "contractor".
PEOPLE = (
    "neighbor neighbour neighbors neighbours friend friends buddy pal "
    "brother sister brothers sisters husband wife son daughter sons daughters "
    "dad father mom mum mother uncle aunt cousin nephew niece grandson "
    "granddaughter grandpa grandma grandfather grandmother boyfriend "
    "girlfriend fiance fiancé fiancee fiancée roommate landlord tenant realtor "
    "agent inspector adjuster in-law pastor kid kids grandkids stepson "
    "stepdaughter stepdad stepmom godson goddaughter dog dogs cat cats puppy "
    "pup kitten pet"
).split()

#: Prepositions that name the place where something happened: a keyword
#: after one ("the drain in our bathroom") is a place.  "on", "in" and
#: "through" also say what the work was on or what was put in ("a great job
#: on our deck", "put in new floors", "got through our punch list"): not
#: after the words of L{_WORK}.
_PLACE = (
    "in inside into under underneath beneath behind around near on onto over "
    "below above across through throughout along beside toward towards"
).split() + ["next to", "all over"]
_WORK = (
    "work works worked working job jobs quote quoted estimate estimates bid "
    "bids price prices priced pricing warranty guarantee deal discount advice "
    "opinion update updates progress started finished done did spent spend "
    "cost costs money help helped put puts putting got get gets getting went "
    "go goes going came come comes brought bring moved called call"
).split() + ["signed off", "sign off", "signs off", "signing off"]
#: What comes before a verb of L{_WORK} when it is no work: "not a speck
#: got on our floors", "a pipe let go under the vanity".
_NOT_WORKERS = ("speck specks drop drops smudge smudges spot spots nothing let").split()
#: Verbs whose object is what got damaged or spared, not the work: "the
#: dishwasher flooded our kitchen", "saved our carpet".  A determiner must
#: follow, so that "damaged drywall" (the work) is not one.
_HARM = (
    "flooded soaked ruined damaged destroyed stained scratched dented gouged "
    "chipped wrecked saved spared protected covered broke cracked smashed "
    "shattered nicked punctured scuffed"
).split()
#: Adjectives for what water got into: "wet drywall" is the damage, the
#: restoration the work.
_WET = "wet damp soaked soggy waterlogged water-logged moldy mouldy".split()
#: What a text says the customer was left with: "now we have water damage".
_AFTERMATH = "caused causing cause causes".split() + [
    "led to",
    "leading to",
    "resulted in",
    "resulting in",
    "left us with",
    "now we have",
    "now there is",
    "now there's",
    "now we've got",
]
#: A failure of the thing named, which is then the cause of the work:
#: "after our toilet overflowed".
_FAILED = (
    "overflowed overflowing burst failed failing broke died quit rotten rotted rotting"
).split() + [
    "backed up",
    "backing up",
    "stopped working",
    "gave out",
    "sprang a leak",
    "let go",
    "stuck",
    "gave way",
    "froze",
    "ruptured",
]
#: Words for what water did, which name the restoration work only when
#: nothing else is named: "water damage from their sloppy install".
_DAMAGE = frozenset(
    "flood flooding water damage mold mould leak leaks moisture".split()
    + ["water damage"]
)
#: What was in the way of the work, or tidied after it, not the work: "cut
#: the drywall back" after a flood, "wiped down the counters".
_DEMOLISH = (
    "cut removed pulled gutted demoed demolished stripped wiped vacuumed swept "
    "mopped dusted tidied"
).split() + [
    "wiped down",
    "wiped off",
    "vacuumed up",
    "vacuumed out",
    "swept up",
    "tore off",
    "torn off",
    "tearing off",
    "cut out",
    "cut away",
    "tore out",
    "torn out",
    "tore up",
    "torn up",
    "ripped out",
    "ripped up",
    "pulled out",
    "pulled up",
    "hauled away",
    "hauled out",
]
#: A stage of a larger job: "right up to the final paint".
_STAGE = "last final".split()
#: Verbs of being at a place, not of working on it: "the crew smoked on our
#: porch", "left a hanger on our front door".
_IDLE = (
    "smoked smoking sat sitting stood standing waited waiting parked parking "
    "left leaving dropped knocked knocking rang ate eating slept napped "
    "lounged threw tossed dumped spat littered"
).split()
#: What a thing that got wet does: "the carpet was squishing again".
_SOAKED = (
    "squishes squishing squished squishy soaked sopping warped buckled "
    "buckling ruined mildewed smells smelled stinks reeks survived survives"
).split() + ["got wet", "was wet", "were wet", "is wet", "are wet"]
_SOAKED += [f"{was} {saved}" for was in "was were got" for saved in ("saved", "spared")]
#: Work another firm did, said after it: "the kitchen itself was done by
#: another contractor".
_ELSEWHERE = [
    f"{done} by {other}"
    for done in "done handled built installed".split()
    for other in ("another", "a different", "other", "someone else")
]
#: What a thing no longer does once the work is done, said after it: "the
#: faucet doesn't drip", a result of the work named, not the work.
_RESULTS = [
    f"{no} {does}"
    for no in ("doesn't", "does not", "don't", "do not", "no longer", "won't")
    for does in "drip leak run flicker trip stick".split()
]
#: What work leaves behind, not the work: "drywall dust on the counters".
_MESS = (
    "dust debris scraps mess splatter splatters drips overspray fumes residue "
    "shavings chips flecks"
).split()
#: What things in the way of the work did: "our toilet spent two weeks
#: sitting in the hallway".
_PARKED = "sat sitting lay lying stored".split()
#: Things torn out, said after them: "two feet of drywall cut out".
_TORN = [
    "cut out",
    "cut back",
    "cut away",
    "torn out",
    "torn off",
    "torn up",
    "ripped out",
    "ripped up",
    "ripped off",
    "pulled out",
    "pulled up",
    "demoed",
    "gutted",
]
#: Asking about a thing, which is no work on it: "asked him about our water
#: heater".
_ASKED_ABOUT = [
    f"{asked}{whom} about"
    for asked in "asked ask asking asks question questions".split()
    for whom in ("", " him", " her", " them", " us", " me")
]
#: What the customer got in themselves: "had rented fans drying out the
#: hallway".
_OWN_DOING = "rented borrowed bought".split()
#: Words before a trade's people that make them another firm's: "two
#: roofers and a plumber couldn't find it", "we paid another plumber".
_OTHER_FIRMS = "another other previous two three four several".split()
#: Rooms, and the parts of a room that make a room word a place: "the
#: kitchen lighting" is where the electrical work was.
_ROOMS = frozenset(
    "kitchen bathroom bath basement attic garage pantry laundry bedroom "
    "closet hallway mudroom ensuite".split()
    + ["powder room", "living room", "laundry room", "master bath"]
)
_ROOM_PARTS = (
    "ceiling ceilings wall walls floor lighting light lights fan fans vent "
    "vents exhaust door doors trim baseboard baseboards drawer drawers"
).split()
#: People of a trade, who are named in passing as often as for their work:
#: "an excuse about cabinets or the plumber".
_TRADES = frozenset(
    "plumber plumbers electrician electricians painter painters roofer "
    "roofers carpenter carpenters tiler tilers drywaller drywallers".split()
)
_PASSING = "or nor about for".split()
#: Verbs of hiring before "a" trade's person, who is then another firm's:
#: "we paid a painter to patch them".
_HIRED = "paid pay paying hired hire hiring".split()
#: The one service of a list of small jobs ("a handyman visit") and, among
#: its keywords, those that say so rather than name an item of the list (a
#: punch list is a stage of any larger job, so not one of them).
_CATCH_ALL = "handyman"
_LIST_WORDS = "handyman handymen honey do jobs repairs fixes tasks odd errands".split()
#: The words of a text as the referrals model reads them, beside a keyword
#: and anywhere in it.
_WORDS = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
#: Words that say which one, not what kind: "the old valve" is still the
#: service's, "the reversing valve" of a heat pump another service's part.
_WHICH = (
    "old new leaky leaking dripping broken bad faulty stuck cracked corroded "
    "rusted rusty main same other original existing busted failed burst "
    "frozen copper galvanized pvc cpvc pex brass iron cast plastic water supply"
).split()
#: Words of a small fix, of which a list of jobs across trades that the
#: catch-all service does has several.
_SMALL_WORDS = (
    "fixed patched tightened swapped adjusted hung repaired leaky "
    "leaking dripping drippy loose wobbly squeaky sticking sticky little "
    "small minor few couple broken"
).split()
_CONJUNCTIONS = (
    "and but so then after when because since until before while if though although or"
).split()
_DETERMINER = "the our my his her their your a an this that its some".split()
_FUNCTION = (
    "and or but then to of for with was were is are be been had has have it "
    "they we he she i you not no so as at by if"
).split()


def _trie(terms: Iterable[str]) -> dict[str, Any]:
    """The terms as a trie of characters, white space as one " " step."""
    trie: dict[str, Any] = {}
    for term in terms:
        node = trie
        for i, word in enumerate(term.split()):
            if i:
                node = node.setdefault(" ", {})
            for char in word:
                node = node.setdefault(char, {})
        node[""] = {}
    return trie


def _alternatives(node: dict[str, Any]) -> str:
    """
    The regular expression of a trie node's continuations, longest first:
    at most one can match a text, so the first match is the longest, and
    hundreds of terms cost little more than a few.
    """
    branches = [
        (r"[\s-]+" if key == " " else re.escape(key)) + _alternatives(child)
        for key, child in sorted(node.items())
        if key
    ]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if "" in node:
        return f"(?:{body})?"
    return body


def _any(words: Iterable[str]) -> str:
    """A regular expression for any of C{words}."""
    return f"(?:{_alternatives(_trie(words))})"


def _backwards(words: Iterable[str]) -> str:
    """A regular expression for any of C{words} spelled backwards."""
    return _any(w[::-1] for w in words)


# The words before a keyword are read backwards, from the keyword on, so
# that each is one anchored match rather than a search ending at the
# keyword: up to two words (say "upstairs", "guest") between the keyword
# and the preposition or verb (or its determiner), none of them a function
# word.
_FREE_WORDS = (
    rf"(?:\s+(?!{_backwards(_FUNCTION + _DETERMINER)}(?![\w'-]))[\w'-]+){{0,2}}"
)
_DETERMINED = rf"\s+{_backwards(_DETERMINER)}"
_SIDELINE_BEFORE = re.compile(
    rf"(?P<free>{_FREE_WORDS})(?:"
    rf"(?:{_DETERMINED})?\s+(?:"
    rf"(?:{_backwards(_PLACE)}|(?P<by>yb))"
    rf"(?:\s+(?P<work>{_backwards(_WORK)})(?![\w'-])"
    rf"(?!\s+{_backwards(_NOT_WORKERS)}(?![\w'-]))"
    rf"|(?:\s+[\w'-]+){{0,2}}?\s+(?P<idle>{_backwards(_IDLE)})(?![\w'-]))?"
    rf"|{_backwards(_AFTERMATH + _DEMOLISH + _OWN_DOING + _ASKED_ABOUT)}"
    rf"|erom\s+on)"
    rf"|{_DETERMINED}\s+{_backwards(_HARM)}"
    rf"|\s+{_backwards(_WET)}"
    rf"|(?:\s+fo\s+s?taoc)?\s+{_backwards(_STAGE)}"
    rf")(?![\w-])"
)
# the second item of a place: "painted over the outlet covers and a window
# latch", each with its determiner; not after a verb of work ("put in the
# floors and the trim")
_PLACE_LISTED = re.compile(
    rf"{_FREE_WORDS}{_DETERMINED}\s+dna"
    rf"(?:\s+(?!{_backwards(_FUNCTION + _CONJUNCTIONS)}(?![\w'-]))[\w'-]+){{1,3}}?"
    rf"{_DETERMINED}\s+{_backwards(_PLACE)}(?![\w-])"
    rf"(?!\s+{_backwards(_WORK)}(?![\w'-]))"
)
# up to four words between a thing and what it did, none of them starting
# another clause: "a pipe under the upstairs bath let go"
_BETWEEN_WORDS = rf"(?:\s+(?!{_any(_CONJUNCTIONS)}(?![\w'-]))[\w'-]+){{0,4}}?\s+"
# what work left behind, right after the keyword ("drywall dust"); what
# the thing did once wet ("the carpet was squishing"); or how it failed
_SIDELINE_AFTER = re.compile(
    rf"[\s-]+{_any(_MESS)}(?P<mess>)(?!\w)"
    rf"|{_BETWEEN_WORDS}(?:(?:was|were|is|are|got|had)\s+)?"
    rf"(?:(?P<soaked>{_any(_SOAKED)})|(?P<torn>{_any(_TORN)})"
    rf"|(?P<parked>{_any(_PARKED)})|(?P<elsewhere>{_any(_ELSEWHERE)})"
    rf"|(?P<result>{_any(_RESULTS)})"
    rf"|{_any(_FAILED)})(?!\w)"
)
# what failed, then said to be mended: "pipe burst in the wall ... fixed
# it", "the condensate line overflowed ... cleared the line", "old tank
# out and new one in"
_MENDED = re.compile(
    r"(?<![\w'-])(?:(?:fixed|repaired|replaced|cleared|recharged|unclogged|snaked"
    r"|re-?pitched)\s+(?:it|them|the\s+(?:line|leak))"
    r"|(?:installed|put\s+in)\s+a\s+new\s+one|new\s+one\s+(?:in|installed))(?![\w'-])"
)
# the work itself, gone wrong: "new floors started buckling"
_NEW_BEFORE = re.compile(r"\s+wen(?![\w'])")
# what a thing did ("the dishwasher flooded our kitchen") or was caused by
# ("water damage from their install"): the harm, which may be the work
_HARMED_AFTER = re.compile(
    rf"\s+(?:{_any(_DETERMINER)}\s|from\s|because\s+of\s|due\s+to\s|caused\s+by\s)"
)
_ROOM_PART_AFTER = re.compile(rf"[\s-]+{_any(_ROOM_PARTS)}(?!\w)")
_KIND_BEFORE = re.compile(
    rf"\s+(?!{_backwards(_WHICH + _DETERMINER + _FUNCTION)}(?![\w'-]))[a-z]+(?![\w'-])"
)
_PASSING_BEFORE = re.compile(
    rf"(?:(?:\s+{_backwards(_DETERMINER)})?\s+{_backwards(_PASSING)}"
    rf"|\s+(?:{_backwards(_OTHER_FIRMS)}|\d+)"
    rf"|\s+(?:a|na)\s+{_backwards(_HIRED)})(?![\w-])"
)
_PEOPLE_BEFORE = re.compile(
    rf"\s*,?\s*(?:s')?(?:wal-ni-)?"
    rf"{_backwards([*PEOPLE, 'also named', 'also called', 'another'])}(?![\w-])"
)
# a name told apart from another who bears it: "Neighbor Tom (different
# Tom lol)" says that the other Toms of the text are the technician
_DIFFERENT_BEFORE = re.compile(r"\s+(?:tnereffid|rehto)(?![\w-])")
_PEOPLE_AFTER = re.compile(
    rf"\s*(?:,|\(|-)\s*(?:{_any(_DETERMINER)}\s+)?{_any(PEOPLE)}(?!\w)"
)
# a window of time: "the 8-12 window", "a 4 hour window", "the 1pm window";
# said after it: "the window was 8-12"
_TIME_BEFORE = re.compile(
    r"\s+(?:\d+\s*(?:-|–|ot)\s*\d+|(?:mp|ma|\.m\.p|\.m\.a|noon|ruoh|rh)(?![\w'])"
    r"|\d+(?::\d+)?(?:mp|ma)|(?:ruoh|rh)[\s-]*[\w]+)"
)
_TIME_AFTER = re.compile(
    r"\s+(?:was|is|of|from|between|being)\s+"
    r"(?:\d{1,2}(?::\d\d)?\s*(?:-|–|to)\s*\d|\d{1,2}(?::\d\d)?\s*(?:am|pm|a\.m|p\.m))"
)
_STREET_AFTER = re.compile(
    r"\s+(?:street|st|avenue|ave|road|rd|boulevard|blvd|highway|hwy|drive|dr|lane"
    r"|ln|way|parkway|pkwy|court|ct|general electric|cement)(?![\w-])"
)
#: Capitalised words after a name that are no surname: a sentence whose
#: full stop was left out ("Thanks Sam Great job"), a day.
_NOT_SURNAMES = frozenset(
    "great thanks thank very super highly best good awesome excellent amazing "
    "would will can did came arrived fixed called from on in our my me us "
    "monday tuesday wednesday thursday friday saturday sunday january "
    "february march april may june july august september october november "
    "december today yesterday tomorrow".split()
)
_CAPITALISED = re.compile(r" ([A-Z][a-z]+)(?![\w.-])")
_BETWEEN_COMPOUND = re.compile(r"[\s-]*")
_LIST = re.compile(r":\s")
_SENTENCE_ENDS = (". ", "! ", "? ", "\n")
# between a service's keyword and what its work was done on or for: "painted
# the kitchen", "repainted the exterior trim and fascia", "a circuit for the
# kitchen island"
_OBJECT_BETWEEN = re.compile(
    rf"\s+(?:(?:off|outside|beside|behind|(?P<purpose>for))\s+)?{_any(_DETERMINER)}\s+"
    rf"(?:(?:(?!{_any(_FUNCTION + _DETERMINER + _CONJUNCTIONS)}\s)[\w'-]+\s+){{0,3}}?"
    rf"(?:and|&)\s+(?:{_any(_DETERMINER)}\s+)?)?"
)
# a job, not a place: "paint for the bathroom remodel" is for that job
_WORK_NOUN = re.compile(
    r"(?:[\w'-]+[\s-]+)?(?:remodel|remodeling|renovation|reno|install|installation"
    r"|job|project|repair|repairs|replacement|build)(?!\w)"
)
_SMALL = re.compile(rf"(?<![\w'-]){_any(_SMALL_WORDS)}(?![\w'-])")
_ITEM_SEPARATORS = re.compile(r",\s+(?:and\s+)?|\s+and\s+")

#: A name this long or longer is found with one typing slip.
TYPO_MIN = 6
#: A shorter name this long or longer is found with a letter doubled.
DOUBLED_MIN = 4

_SERVICES = "services"
_TECHNICIANS = "technicians"
_AREAS = "areas"


def fold(text: str) -> str:
    """The key two spellings share when they differ only in case."""
    return " ".join(text.casefold().split())


@lru_cache(maxsize=8)
def _pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    # A lookahead at every word start, so that every place a term starts is
    # seen; the longest term starting at a place is the one reported (find()
    # then keeps the leftmost-longest ones that do not overlap). Runs of
    # white space in a phrase match any white space; lookarounds rather than
    # \b, because terms may start or end with punctuation ("Mike R.", "A/C").
    # Matched against casefolded text, three times faster than IGNORECASE.
    # A thousand-odd terms (with the slips of names) make a pattern that takes
    # some 50 ms to build: kept for the last few sets of terms, since every
    # reload of unchanged business data asks for the same one.
    trie = _trie(terms)
    if not trie:
        return None
    return re.compile(rf"(?<!\w)(?=({_alternatives(trie)})(?!\w))")


def plural(term: str) -> str | None:
    """
    The regular plural of a keyword (C{plumber}: C{plumbers}, C{mini
    split}: C{mini splits}, C{GFCI}: C{GFCIs}), or None: for a keyword
    ending in punctuation or a short word (C{A/C}, C{AC}), or in "s"
    (C{gutters}), whose plural is irregular or the keyword itself.
    """
    words = term.split()
    last = words[-1] if words else ""
    if len(last) < 3 or not last.isalpha():
        return None
    if last.isupper():
        return term + "s"
    if not last.islower():
        return None
    if last.endswith(("s", "x", "z", "ch", "sh")):
        return None if last.endswith("s") else term + "es"
    if last.endswith("y") and last[-2] not in "aeiou":
        return term[:-1] + "ies"
    return term + "s"


def singular(term: str) -> str | None:
    """
    The singular of a keyword given in the plural, or None: only of a
    long enough regular one (C{cabinets}: C{cabinet}), since a short one's
    singular often has other senses (C{floors}, C{blinds}).
    """
    words = term.split()
    last = words[-1] if words else ""
    if (
        len(last) < 7
        or not last.isalpha()
        or not last.islower()
        or not last.endswith("s")
        or last.endswith(("ss", "ves", "ies", "ses", "xes", "ches", "shes"))
    ):
        return None
    return term[:-1]


#: Particles of a phrasal verb, and the short objects that may come between
#: verb and particle: "dried it out" is "dried out".
_PARTICLES = "out up off down".split()
_SHORT_OBJECTS = "it them everything".split()


def separated(term: str) -> list[str]:
    """
    A two-word phrasal-verb keyword with a short object put between its
    words (C{dried out}: C{dried it out}, C{dried them out}), or none.
    """
    words = term.split()
    if len(words) != 2 or words[1].casefold() not in _PARTICLES:
        return []
    return [f"{words[0]} {o} {words[1]}" for o in _SHORT_OBJECTS]


def redone(term: str, keywords: Iterable[str]) -> list[str]:
    """
    The past and present participles of a keyword that is another of
    C{keywords} done again (C{reroof}, where C{roof} is one: C{reroofed},
    C{reroofing}; C{re-pipe}: C{re-piped}), or none: a verb of work, whose
    forms are regular, where other keywords' are often other words
    (C{deck}: C{decked out}).
    """
    word = fold(term)
    bare = word.replace("-", "")
    if (
        not (bare.startswith("re") and bare.isalpha())
        or bare.endswith(("ed", "ing"))
        or bare[2:] not in {fold(k) for k in keywords}
    ):
        return []
    stem = word[:-1] if word.endswith("e") else word
    return [f"{stem}ed", f"{stem}ing"]


def doubled(word: str) -> set[str]:
    """
    The spellings of C{word} with one letter, not the first, written twice
    (C{hana}: C{hanna}), the slip short names are found with.
    """
    return {word[:i] + word[i - 1 :] for i in range(2, len(word) + 1)}


def slips(word: str) -> set[str]:
    """
    Every spelling one typing slip away from C{word} (lower case): a letter
    missing, added, replaced, or two neighbours swapped, the first letter
    kept.
    """
    found: set[str] = set()
    for i in range(1, len(word) + 1):
        head, tail = word[:i], word[i:]
        if tail:
            found.add(head + tail[1:])
        if len(tail) > 1:
            found.add(head + tail[1] + tail[0] + tail[2:])
        for letter in string.ascii_lowercase:
            if tail:
                found.add(head + letter + tail[1:])
            found.add(head + letter + tail)
    found.discard(word)
    return found


class Matcher:
    """
    Finds a business's technicians (by name or alias), services (by name or
    keyword) and service areas in review texts.
    """

    def __init__(self, business: Business, referrals: Referrals | None = None) -> None:
        self._referrals = referrals or shipped()
        self._owners: dict[str, list[tuple[str, str]]] = {}
        for technician in business.technicians:
            for term in (technician.name, *technician.aliases):
                self._own(term, _TECHNICIANS, technician.name)
        for service in business.services:
            for term in (service.name, *service.keywords):
                self._own(term, _SERVICES, service.id)
        for area in business.service_areas:
            self._own(area, _AREAS, area)
        given = set(self._owners)
        for first, name in _first_names(business):
            if first not in given:
                self._own(first, _TECHNICIANS, name)
        for service in business.services:
            for term in (service.name, *service.keywords):
                for more in (
                    plural(term),
                    singular(term),
                    *separated(term),
                    *redone(term, service.keywords),
                ):
                    if more is not None and fold(more) not in given:
                        self._own(more, _SERVICES, service.id)
        for phrase in EVERYDAY_SENSES:
            self._owners.setdefault(fold(phrase), [])
        self._typos = _typos(self._owners)
        self._pattern = _pattern(tuple(sorted({*self._owners, *self._typos})))
        self._terms = {
            term: tuple(
                frozenset(o for k, o in owners if k == kind)
                for kind in (_TECHNICIANS, _SERVICES, _AREAS)
            )
            for term, owners in self._owners.items()
        }
        self.technician_names = self._index(
            (t.name, t.name) for t in business.technicians
        ) | self._index(
            (alias, t.name) for t in business.technicians for alias in t.aliases
        )
        # one-word keywords that end a longer keyword of their service
        # ("valve": "shutoff valve"), with their plurals
        heads = {
            fold(term)
            for service in business.services
            for term in service.keywords
            if " " not in term.strip()
            and any(
                fold(k).split()[-1:] == [fold(term)]
                for k in service.keywords
                if " " in k.strip()
            )
        }
        self._heads = frozenset(
            heads | {fold(p) for p in map(plural, heads) if p is not None}
        )
        catch_all = [s for s in business.services if _CATCH_ALL in fold(s.id + s.name)]
        self._catch_all = frozenset(s.id for s in catch_all)
        self._list_words = frozenset(
            term
            for s in catch_all
            for term in self._owners
            if s.id in self._terms[term][1]
            and any(w in _LIST_WORDS for w in re.split(r"[\s-]+", term))
        )
        self.service_ids = self._index(
            (key, s.id) for s in business.services for key in (s.id, s.name)
        )

    def _own(self, term: str, kind: str, owner: str) -> None:
        if term.strip():
            owners = self._owners.setdefault(fold(term), [])
            if (kind, owner) not in owners:
                owners.append((kind, owner))

    @staticmethod
    def _index(pairs: Iterable[tuple[str, str]]) -> dict[str, frozenset[str]]:
        index: dict[str, set[str]] = {}
        for key, value in pairs:
            index.setdefault(fold(key), set()).add(value)
        return {key: frozenset(values) for key, values in index.items()}

    def technicians_called(self, name: str) -> frozenset[str]:
        """The technicians whose name or an alias is C{name}, in any case."""
        return self.technician_names.get(fold(name), frozenset())

    def services_called(self, key: str) -> frozenset[str]:
        """The service ids whose id or name is C{key}, in any case."""
        return self.service_ids.get(fold(key), frozenset())

    def find(self, text: str | None) -> Found:
        """What C{text} mentions, by the rules of the module docstring."""
        if not text or self._pattern is None:
            return NOTHING
        folded = text.casefold()
        spans = self._spans(text, folded)
        if not spans:
            return NOTHING
        backwards = folded[::-1]
        technicians = self._technicians(text, folded, backwards, spans)
        refers = self._referrals.refers
        services = {
            service
            for service, features, keywords in self._read_services(
                folded, backwards, spans
            )
            if refers(features, keywords)
        }
        areas = {
            o
            for _, end, t in spans
            if self._terms[t][2] and not _STREET_AFTER.match(folded, end, end + 20)
            for o in self._terms[t][2]
        }
        if not (technicians or services or areas):
            return NOTHING
        return Found(
            technicians=frozenset(technicians),
            services=frozenset(services),
            areas=frozenset(areas),
        )

    def _spans(self, text: str, folded: str) -> list[tuple[int, int, str]]:
        """
        The leftmost-longest terms in C{folded}, the casefolded C{text}:
        start, end, term.  A name written with a slip counts where written
        with a capital, or where the whole text is in lower case.
        """
        assert self._pattern is not None
        owners, typos = self._owners, self._typos
        spans: list[tuple[int, int, str]] = []
        end = -1
        for match in self._pattern.finditer(folded):
            start = match.start()
            if start < end:
                continue
            found = match.group(1)
            term = found if found in owners else fold(found)
            if term not in owners and "-" in term:
                term = fold(term.replace("-", " "))
            if term not in owners:
                # a slip: casefolding must not have moved the offsets (ß)
                if len(text) != len(folded) or not (
                    text[start].isupper() or text.islower()
                ):
                    continue
                term = typos[term]
            end = start + len(found)
            spans.append((start, end, term))
        return spans

    def _technicians(
        self,
        text: str,
        folded: str,
        backwards: str,
        spans: list[tuple[int, int, str]],
    ) -> set[str]:
        """
        The technicians named, less the names another person bears.
        C{folded} is C{text} casefolded, C{backwards} that reversed.
        """
        named: list[tuple[str, str]] = []
        others: set[str] = set()
        told_apart: set[str] = set()
        plain: set[str] = set()  # terms once written neither way
        terms = self._terms
        for start, end, term in spans:
            owners = terms[term][0]
            if not owners:
                continue
            back = len(folded) - start
            if (
                _PEOPLE_BEFORE.match(backwards, back, back + 40)
                or _PEOPLE_AFTER.match(folded, end, end + 40)
                or self._other_surname(text, folded, end, term, owners)
            ):
                others.add(term)
            elif _DIFFERENT_BEFORE.match(backwards, back, back + 12):
                told_apart.add(term)
            else:
                plain.add(term)
            named.extend((term, owner) for owner in owners)
        return {
            owner
            for term, owner in named
            if term not in others or (term in told_apart and term in plain)
        }

    def _other_surname(
        self, text: str, folded: str, end: int, term: str, owners: frozenset[str]
    ) -> bool:
        """
        Whether the one-word name C{term}, ending at C{end}, is followed by a
        surname none of its technicians bears, nor one slip from it: "Sam
        Smith" is not Sam Whitfield.
        """
        if " " in term or len(text) != len(folded):
            return False
        after = _CAPITALISED.match(text, end, end + 40)
        if after is None or text.istitle():
            return False
        word = after.group(1).casefold()
        if (
            word in self._terms
            or word in _NOT_SURNAMES
            or word in _FUNCTION
            or word in _DETERMINER
        ):
            return False
        surnames = {w for name in owners for w in fold(name).split()[1:]}
        return not surnames or not any(word == s or word in slips(s) for s in surnames)

    def _services(
        self, folded: str, backwards: str, spans: list[tuple[int, int, str]]
    ) -> list[tuple[int, frozenset[str], int, str]]:
        """
        Each service keyword of the text: where it starts, its services, how
        plainly it names them and the keyword.  A keyword that qualifies
        the next one names none, nor does one in an everyday sense or at a
        place where the crew only was.  C{backwards} is C{folded} reversed.
        """
        # each keyword's services, how plainly it names them (-1 not at
        # all, 0 as a place, 1 as what failed, 2 outright) and the keyword
        found: list[tuple[int, frozenset[str], int, str]] = []
        terms = self._terms
        phrase = 0  # the first span of the run of adjacent terms at hand
        shared = False  # whether a keyword is several services'
        for i, (start, end, term) in enumerate(spans):
            if i and not _BETWEEN_COMPOUND.fullmatch(folded, spans[i - 1][1], start):
                phrase = i
            owners = terms[term][1]
            if not owners:
                continue
            if i + 1 < len(spans):
                after, _, following = spans[i + 1]
                qualified = terms[following][1]
                if (
                    qualified
                    and not qualified & owners
                    and _BETWEEN_COMPOUND.fullmatch(folded, end, after)
                ):
                    continue
            first = spans[phrase][0]
            plainness = _plainness(folded, backwards, first, end, term)
            if plainness == 1 and _MENDED.search(folded, end):
                plainness = 2
            if plainness == 2 and term in self._heads and first == start:
                # a kind the service does not list: "the reversing valve"
                back = len(folded) - start
                if _KIND_BEFORE.match(backwards, back, back + 30):
                    plainness = 1
            if plainness > 0 and phrase:
                # the object of another service's work: "painted the kitchen"
                before, previous = spans[phrase - 1][1], spans[phrase - 1][2]
                between = _OBJECT_BETWEEN.fullmatch(folded, before, first)
                if (
                    terms[previous][1] - owners
                    and between is not None
                    and (
                        between.group("purpose") is None
                        or not _WORK_NOUN.match(folded, end - len(term.split()[-1]))
                    )
                ):
                    plainness = 0
            found.append((start, owners, plainness, term))
            shared = shared or len(owners) > 1
        if ": " in folded:
            found = _listed(folded, found)
        catch_all = self._catch_all
        if catch_all and len({o for _, o, p, _ in found if p >= 0}) >= 3:
            found = _fixes(folded, found, catch_all)
        if catch_all and any(p == 2 and o & catch_all for _, o, p, _ in found):
            found = _small_jobs(folded, found, catch_all, self._list_words)
        if shared:
            found = _narrowed(found)
        return found

    def service_features(self, text: str) -> list[tuple[str, list[str]]]:
        """
        Each service whose keywords C{text} holds, with what the referrals
        model reads of it (L{_read_services}), its keywords' pairs with the
        text's words spelled out as features.
        """
        folded = text.casefold()
        spans = self._spans(text, folded) if self._pattern is not None else []
        return [
            (service, [*features, *keywords.features()])
            for service, features, keywords in self._read_services(
                folded, folded[::-1], spans
            )
        ]

    def _read_services(
        self, folded: str, backwards: str, spans: list[tuple[int, int, str]]
    ) -> list[tuple[str, list[str], Keywords]]:
        """
        Each service whose keywords the text holds, sorted, with its
        features: whether the rules keep it (the services named most
        plainly: outright, failing those as what failed, failing those as
        places), how plainly it and the text's services are named, its
        keywords, the two words on either side of each, how often and by
        how many different keywords the text names it (a service a story
        keeps coming back to is its subject), and how many services the
        text holds and the rules keep; and its keywords among the text's
        words (L{Keywords}).
        """
        found = self._services(folded, backwards, spans)
        if not found:
            return []
        ends = {start: end for start, end, _ in spans}
        plainest: dict[str, int] = {}
        context: dict[str, list[str]] = {}
        named: dict[str, list[str]] = {}
        for start, owners, plainness, term in found:
            end = ends.get(start, start + len(term))
            before = _WORDS.findall(folded, max(0, start - 40), start)[-2:]
            after = _WORDS.findall(folded, end, end + 40)[:2]
            words = [
                f"t {term}",
                *(f"l{len(before) - i} {w}" for i, w in enumerate(before)),
            ]
            words.extend(f"r{i + 1} {w}" for i, w in enumerate(after))
            for owner in owners:
                plainest[owner] = max(plainness, plainest.get(owner, -1))
                context.setdefault(owner, []).extend(words)
                named.setdefault(owner, []).append(term)
        tier = max(plainest.values())
        kept = {o for o, p in plainest.items() if p >= 0 and p == tier}
        text_words = frozenset(_WORDS.findall(folded))
        keywords = {o: Keywords(frozenset(t), text_words) for o, t in named.items()}
        common = [
            f"services {min(len(plainest), 3)}",
            f"kept {min(len(kept), 3)}",
            f"tier {tier}",
        ]
        return [
            (
                owner,
                [
                    "rule" if owner in kept else "not rule",
                    f"plain {plainness}",
                    f"names {min(len(named[owner]), 4)}",
                    f"terms {min(len(keywords[owner].terms), 3)}",
                    *common,
                    *context[owner],
                ],
                keywords[owner],
            )
            for owner, plainness in sorted(plainest.items())
        ]


def _narrowed(
    found: list[tuple[int, frozenset[str], int, str]],
) -> list[tuple[int, frozenset[str], int, str]]:
    """
    C{found}, with a keyword several services list ("burst pipe") counted
    for those of them that another keyword names alone, when some are: a
    burst pipe in a text about mold is the restoration's.
    """
    alone = frozenset().union(*(o for _, o, p, _ in found if p >= 0 and len(o) == 1))
    return [
        (a, o & alone if len(o) > 1 and o & alone else o, p, t) for a, o, p, t in found
    ]


def _sentence(folded: str, at: int) -> tuple[int, int]:
    """Where the sentence around C{folded[at]} starts and ends."""
    head = max(map(folded.rfind, _SENTENCE_ENDS, repeat(0), repeat(at)))
    tail = min(
        (i for i in map(folded.find, _SENTENCE_ENDS, repeat(at)) if i >= 0),
        default=len(folded),
    )
    return head, tail


def _fixes(
    folded: str,
    found: list[tuple[int, frozenset[str], int, str]],
    catch_all: frozenset[str],
) -> list[tuple[int, frozenset[str], int, str]]:
    """
    C{found}, with a sentence that lists three small fixes or more across
    three trades or more ("fixed a dripping faucet, swapped two outlets and
    patched the drywall") read as a visit of the catch-all service.
    """
    done: set[int] = set()
    for at, _, plainness, _ in found:
        if plainness < 1 or at in done:
            continue
        head, tail = _sentence(folded, at)
        inside = [f for f in found if head < f[0] < tail and f[2] >= 0]
        done.update(f[0] for f in inside)
        trades = {f[1] for f in inside}
        if (
            len(trades) >= 3
            and len({f[1] for f in inside if f[2] >= 1}) >= 2
            and not any(t & catch_all for t in trades)
            and len(_ITEM_SEPARATORS.findall(folded, head, tail)) >= 2
            and len(_SMALL.findall(folded, head, tail)) >= 2
        ):
            found = [
                (a, o, min(p, 0) if head < a < tail else p, t) for a, o, p, t in found
            ]
            found.append((head + 1, catch_all, 2, ""))
    return found


def _small_jobs(
    folded: str,
    found: list[tuple[int, frozenset[str], int, str]],
    catch_all: frozenset[str],
    list_words: frozenset[str],
) -> list[tuple[int, frozenset[str], int, str]]:
    """
    C{found}, read for a visit of small jobs: the other services of a
    sentence that lists three jobs or more, one of them the catch-all
    service's ("fixed two sticking doors, patched a hole and tightened the
    railing"), are its items; and the catch-all's items named within
    another service's job ("the weatherstripping seals tight" on a new
    door) are parts of that job.
    """
    for at, owners, plainness, _ in found:
        if plainness != 2 or not owners & catch_all:
            continue
        head, tail = _sentence(folded, at)
        if len(_ITEM_SEPARATORS.findall(folded, head, tail)) >= 2:
            found = [
                (a, o, min(p, 0) if head < a < tail and not o & catch_all else p, t)
                for a, o, p, t in found
            ]
    if any(p == 2 and not o & catch_all for _, o, p, _ in found) and not any(
        p == 2 and o & catch_all and t in list_words for _, o, p, t in found
    ):
        found = [(a, o, min(p, 0) if o & catch_all else p, t) for a, o, p, t in found]
    return found


def _listed(
    folded: str, found: list[tuple[int, frozenset[str], int, str]]
) -> list[tuple[int, frozenset[str], int, str]]:
    """
    C{found}, with the services of the items of a list that a service
    named outright heads ("a handyman day: shelves, a faucet, the tub";
    "kitchen remodel: cabinets, lighting, paint") named as its parts only.
    """
    for colon in _LIST.finditer(folded):
        head = max(map(folded.rfind, _SENTENCE_ENDS, repeat(0), repeat(colon.start())))
        tail = min(
            (
                i
                for i in map(folded.find, _SENTENCE_ENDS, repeat(colon.end()))
                if i >= 0
            ),
            default=len(folded),
        )
        job = frozenset().union(
            *(
                o
                for at, o, plain, _ in found
                if head < at < colon.start() and plain == 2
            )
        )
        if job:
            found = [
                (
                    at,
                    owners,
                    min(plain, 0)
                    if colon.end() <= at < tail and not owners & job
                    else plain,
                    term,
                )
                for at, owners, plain, term in found
            ]
    return found


def _plainness(folded: str, backwards: str, start: int, end: int, term: str) -> int:
    """
    How plainly the keyword C{term} at C{folded[start:end]} names the work:
    -1 not at all (an everyday sense, a place where the crew only was); 0
    when named as a place, what got damaged or wet, what was torn out, a
    stage of a larger job, a trade in passing or what the customer was left
    with; 1 when as what failed (the cause of the work, which may be the
    work); 2 otherwise.
    """
    back = len(folded) - start
    if term == "window" and (
        _TIME_BEFORE.match(backwards, back, back + 20)
        or _TIME_AFTER.match(folded, end, end + 20)
    ):
        return -1
    before = _SIDELINE_BEFORE.match(backwards, back, back + 60)
    if (
        before is not None
        and before.group("work") is None
        and (before.group("by") is None or "wen" not in before.group("free"))
    ):
        if before.group("idle") is not None and "wen" not in before.group("free"):
            return -1
        return 0
    if _PLACE_LISTED.match(backwards, back, back + 80):
        return 0
    after = _SIDELINE_AFTER.match(folded, end, end + 60)
    if (
        after is not None
        and after.lastgroup in (None, "soaked")
        and _NEW_BEFORE.match(backwards, back, back + 5)
    ):
        after = None  # the new work itself gone wrong
    if (
        (after is not None and after.lastgroup is not None)
        or (term in _ROOMS and _ROOM_PART_AFTER.match(folded, end, end + 20))
        or (term in _TRADES and _PASSING_BEFORE.match(backwards, back, back + 20))
    ):
        return 0
    if after is not None or (
        (term in _HARM or term in _DAMAGE)
        and _HARMED_AFTER.match(folded, end, end + 12)
    ):
        return 1
    return 2


def _first_names(business: Business) -> list[tuple[str, str]]:
    """The first words of technicians' names no other technician shares."""
    firsts: dict[str, set[str]] = {}
    for technician in business.technicians:
        words = fold(technician.name).split()
        if len(words) > 1:
            firsts.setdefault(words[0], set()).add(technician.name)
    return [(first, next(iter(n))) for first, n in firsts.items() if len(n) == 1]


def _typos(owners: dict[str, list[tuple[str, str]]]) -> dict[str, str]:
    """
    Spellings one slip away from a one-word technician term of at least
    L{TYPO_MIN} letters, to that term: none that is a term itself, nor one
    slip away from two technicians' terms.
    """
    claims: dict[str, set[tuple[str, str]]] = {}
    for term, kinds in owners.items():
        names = {o for k, o in kinds if k == _TECHNICIANS}
        if len(names) != 1 or len(term) < DOUBLED_MIN or not term.isalpha():
            continue
        (name,) = names
        for slip in slips(term) if len(term) >= TYPO_MIN else doubled(term):
            claims.setdefault(slip, set()).add((term, name))
    return {
        slip: min(terms)[0]
        for slip, terms in claims.items()
        if slip not in owners and len({n for _, n in terms}) == 1
    }
