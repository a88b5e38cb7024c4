"""The graph-only answer's weights and limits, named, in one place.

`kgqa --llm none` (and the reader's prior: the graph's picks are offered to the reader as
candidates) picks its answer with these numbers; the reader decides without them. They were
set by hand while the graph path was developed against the public sets (`corpus/` and
`../shared/real-docs`), each kept because it moved those sets, and none was fitted by a search.
`benchmarks/bench_graph_weights.py` measures every one of them today: the three public sets
answered with each weight at half, one and a half times and its neutral value (1 for a factor,
0 for a bonus), against the answers with all of them as they are. What it found is said
beside each (`± none`: no answer changes either way; `neutral costs N`: the neutral value
loses N answers over the three sets). Names are read at call time (`W.NAME`), so that the
benchmark can set them.

Numbers that only shape text (how long a quoted paragraph runs) stay beside the code that
writes it; retrieval's own weights (which units the reader sees too) are `qa.units`'.
"""

from __future__ import annotations

from typing import Final

# -- candidates for a choice (`qa.candidates.CandidateScorer.weigh`) ----------------------------
#: how many of the best retrieved units are weighed for what they are about
CANDIDATE_UNITS: Final = 30
#: what a unit's match earns a thing it names (beside its subject, which earns all of it): more
#: when the unit's subject is a thing the question names (its README names the answer)
MENTION_SHARE_UNDER_NAMED: Final = 0.8
MENTION_SHARE: Final = 0.35
#: the best unit about a thing counts fully, the n-th one DECAY**n: many loose matches in a long
#: README must not outweigh the one unit that says what the question asks
EVIDENCE_DECAY: Final = 0.5
#: how many whole documents that best match the question lend their subjects as candidates
PROFILE_DOCUMENTS: Final = 4
#: a document about a thing the question names lends its things this share of its match
PROFILE_UNDER_NAMED: Final = 0.9
#: a candidate's score: this share from its units, and this from its documents' match
EVIDENCE_SHARE: Final = 0.55
PROFILE_SHARE: Final = 0.45
#: a candidate of the kind the question asks for, of another kind of software, of any other
#: kind; a format when the question names no kind (a step on the way, not a pick)
FIT_WANTED: Final = 1.6
FIT_OTHER_SOFTWARE: Final = 1.15
FIT_OTHER: Final = 0.6
FIT_FORMAT: Final = 0.7
#: what each requirement the graph links a candidate to adds (times its specificity), and the
#: most that requirements it is known not to meet take away
CONSTRAINT_GAIN: Final = 0.6
CONSTRAINT_FLOOR: Final = -0.5
#: the factor for each rare piece of hardware or platform asked for that a candidate is not
#: linked to, when another candidate is
UNMET_FACTOR: Final = 0.6
#: the candidates within this share of the best are recommended, at most MAX_PICKS of them
CLOSE_SHARE: Final = 0.55
MAX_PICKS: Final = 3
#: a thing at most one unit in RARE_PER names (or RARE_MIN units) says something specific
RARE_PER: Final = 100
RARE_MIN: Final = 2
#: what a thing a sentence lists earns of the sentence's match: a base, and a gain for the share
#: of the question's words its own clause holds ("four tools, each with its use")
CLAUSE_BASE: Final = 0.3
CLAUSE_GAIN: Final = 1.2

# -- the alternatives a question names (`qa.candidates.option_candidates`, `qa.options`) ----------
#: the retrieved units an alternative's evidence is drawn from, and the documents of the best
#: of them whose other units naming an alternative join
OPTION_UNITS: Final = 60
OPTION_DOCUMENTS: Final = 20
#: the retrieval score of a unit retrieval did not rank (a document's other unit)
OPTION_UNRANKED: Final = 0.3
#: an alternative's coverage: its best units' relevance, this many of them, over this scale
OPTION_COVERAGE_UNITS: Final = 3
OPTION_COVERAGE_SCALE: Final = 10.0
#: alternatives within this share of the best are recommended beside it
OPTION_CLOSE: Final = 0.8
#: what a comparison table's verdict is worth: more than cue words and coverage can add
TABLE_VOTE: Final = 10.0
#: how much a recommending or discouraging sentence's overlap with the question adds
CUE_OVERLAP_GAIN: Final = 0.5
#: the question's words in the section above a table count this many times
TABLE_SECTION_WEIGHT: Final = 2

# -- a two-part question (`qa.candidates.bridge`) -------------------------------------------------
#: the best units whose things the first part may lead to
BRIDGE_UNITS: Final = 8
#: a thing it leads to has this many units of its own, or a named thing's unit speaks of it
BRIDGE_OWN_UNITS: Final = 5
#: the second part's own units, and each named thing's units about the thing led to
BRIDGE_HOP_UNITS: Final = 6
BRIDGE_TOLD_UNITS: Final = 2
#: the path shown: this many of the named things' units on the thing led to, and of its own
BRIDGE_POINTS: Final = 2

# -- the graph's advice (`qa.compose.GraphComposer`) -----------------------------------------------
#: the n-th pick of a ranked recommendation weighs 1 / (1 + RANK_DECAY * (n - 1))
RANK_DECAY: Final = 0.6
#: what a NOT_RECOMMENDED edge from a matched situation takes away (times its match)
NOT_RECOMMENDED_PENALTY: Final = 2.0
#: what running on named hardware is worth as a reason
RUNS_ON_WEIGHT: Final = 0.4
#: a reason that is a path of more than one edge
MULTI_HOP_GAIN: Final = 1.5
#: the best reason counts fully, each further one this much: many weak ones must not outvote one
FURTHER_REASONS: Final = 0.3
#: a pick that runs on named hardware; that works with what the question already uses; of the
#: kind the question asks for
RUNS_ON_GAIN: Final = 1.5
ROUTE_GAIN: Final = 1.5
WANTED_TYPE_GAIN: Final = 2.0
#: the picks within this share of the best are recommended, at most MAX_GRAPH_PICKS of them
GRAPH_CLOSE: Final = 0.34
MAX_GRAPH_PICKS: Final = 4
#: a situation matched at least this well counts as linked for facts
SITUATION_LINK: Final = 0.6
#: a fact edge between two things the question names ranks first by this bonus
BOTH_ENDS_BONUS: Final = 3
#: situations matched this well each bring their first recommendation
SITUATION_FLOOR: Final = 0.45

# -- the answer's points (`qa.evidence.EvidenceComposer`) ------------------------------------------
#: the reasons shown for the first pick (one for each other), the graph's picks taken and the
#: paths read for each
MAX_POINTS: Final = 3
GRAPH_PICKS: Final = 3
PATHS_PER_PICK: Final = 3
#: excerpts shown alone, and beside a recommendation; the graph's route facts shown
FACTS_ALONE: Final = 4
FACTS_WITH_PICKS: Final = 2
GRAPH_FACTS: Final = 3
#: the other candidates weighed that a reader may pick among
WEIGHED: Final = 4
#: the units a fact is drawn from; at most this many from one document
FACT_UNITS: Final = 30
FACTS_PER_DOCUMENT: Final = 3
#: a unit narrower than this (in Latin characters) tells little unless it is a row, code or
#: the evidence of the asked relation
TELLING_WIDTH: Final = 20
#: the reordering of reasons by what each adds looks this far down
COVERING_UNITS: Final = 12
#: "do the documents agree?": the retrieved units read, the documents shown
AGREE_UNITS: Final = 40
AGREE_DOCUMENTS: Final = 3
#: a named section's points, and the shortest title that counts as named
SECTION_POINTS: Final = 6
SECTION_TITLE: Final = 4

# -- weighing a unit against a question (`qa.unit_index.UnitIndex`) --------------------------------
#: a unit's order: this share from retrieval's score, and this from its relevance
RETRIEVAL_SHARE: Final = 0.5
RELEVANCE_SHARE: Final = 0.5
#: a unit that is the evidence of an edge of the asked relation
STATES_ASKED_GAIN: Final = 1.6
#: its section title's words count this much
TITLE_WEIGHT: Final = 0.5
#: a heading, and a fragment narrower than FRAGMENT_WIDTH, are worth this much
HEADING_WEIGHT: Final = 0.3
FRAGMENT_WEIGHT: Final = 0.6
FRAGMENT_WIDTH: Final = 25
#: each kind of value asked for that a unit states ("2×", "16 GB") multiplies by 1 + this
HINT_GAIN: Final = 0.8
#: a thing named everywhere is this specific (one few units name is 1); fewer units than
#: SPECIFICITY_UNITS say little of rarity, and a thing named in SPECIFICITY_COMMON of them is common
SPECIFICITY_FLOOR: Final = 0.5
SPECIFICITY_UNITS: Final = 20
SPECIFICITY_COMMON: Final = 10
#: a thing's own units retrieval left out join at this share of the lowest retrieved score; this
#: many of them, and of its documents' units naming it
OWN_UNITS_SHARE: Final = 0.5
OWN_UNITS: Final = 400
OWN_NAMING_UNITS: Final = 100
#: the units read for a thing's definition
DEFINITION_UNITS: Final = 80
#: a table row's siblings shown with it lie within this many characters
ROW_WINDOW: Final = 4000
#: the row of the recommended thing comes first by this share of the question's weight (less
#: when its label does not name it)
OWN_ROW_BONUS: Final = 1.0
OWN_ROW_UNNAMED: Final = 0.5

# -- what the sources do not cover (`qa.answerable.Answerability`) --------------------------------
#: a price or a rate asked for must be stated by one of the best units
QUANTITY_UNITS: Final = 12
