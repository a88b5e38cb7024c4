"""The graph-only answer's weights and limits, named, in one place.

`kgqa --llm none` (and the reader's prior: the graph's picks are offered to the reader as
candidates) picks its answer with these numbers; the reader decides without them. They were
set by hand while the graph path was developed against the public sets (`corpus/` and
`../shared/real-docs`), each kept because it moved those sets; none was fitted by a search.

`benchmarks/bench_graph_weights.py` measures each: the three public sets (dev, real-docs,
real-articles) answered by the graph alone with the weight at half, one and a half times, and
its neutral value (1 for a factor, 0 for a bonus or a threshold), against the answers with all
weights as they are. `measured:` beside each says what it found: `=` no right answer changes;
`docs -2+0` two right answers on real-docs turn wrong and none turns right. A weight whose
neutral value changed no answer was removed (sixteen of them: kind-fit factors other than the
asked kind, the specificity of a name, gains for multi-edge paths, routes and further reasons,
shares for what a named thing's documents say, the overlap of a cue sentence, the weight of a
heading, and others); the ones left at `neutral: =` decide how many alternatives are shown
(`CLOSE_SHARE`, `OPTION_CLOSE`, `GRAPH_CLOSE`), read a table's section (`TABLE_SECTION_WEIGHT`)
or a NOT_RECOMMENDED edge (`NOT_RECOMMENDED_PENALTY`), or stand for a score that must be
something (`OPTION_UNRANKED`). Names are read at call time (`W.NAME`), so that the benchmark can
set them.

Numbers that only shape text (how long a quoted paragraph runs) stay beside the code that
writes it; retrieval's own weights (which units the reader sees too) are `qa.retrieve.units`' and
`qa.retrieve`'s.
"""

from __future__ import annotations

from typing import Final

# -- candidates for a choice (`qa.decide.graph.weigh.CandidateScorer.weigh`) -----------------------
#: how many of the best retrieved units are weighed for what they are about
#: measured: half: docs -1+0; 1.5x: dev -1+0, docs -1+0
CANDIDATE_UNITS: Final = 30
#: the best unit about a thing counts fully, the n-th one DECAY**n: many loose matches in a long
#: README must not outweigh the one unit that says what the question asks
#: measured: half: =; 1.5x: =; neutral: docs -3+0
EVIDENCE_DECAY: Final = 0.5
#: how many whole documents that best match the question lend their subjects as candidates
#: measured: half: docs -2+0; 1.5x: =
PROFILE_DOCUMENTS: Final = 4
#: a candidate's score: this share from its units, and this from its documents' match
#: measured: half: dev -1+0, docs -1+0; 1.5x: =
EVIDENCE_SHARE: Final = 0.55
#: measured: half: =; 1.5x: dev -1+0
PROFILE_SHARE: Final = 0.45
#: a candidate of the kind the question asks for (any other kind: 1)
#: measured: half: docs -2+0, arts -1+0; 1.5x: docs -1+0; neutral: docs -2+0
FIT_WANTED: Final = 1.6
#: what each requirement the graph links a candidate to adds, and the most that requirements
#: it is known not to meet take away
#: measured: half: =; 1.5x: docs -1+0; neutral: docs -2+1, arts -0+1
CONSTRAINT_GAIN: Final = 0.6
#: measured: half: =; 1.5x: =
CONSTRAINT_FLOOR: Final = -0.5
#: the candidates within this share of the best are recommended, at most MAX_PICKS of them
#: measured: half: =; 1.5x: =; neutral: =
CLOSE_SHARE: Final = 0.55
#: measured: half: =; 1.5x: =
MAX_PICKS: Final = 3
#: a thing at most one unit in RARE_PER names (or RARE_MIN units) says something specific
#: measured: half: =; 1.5x: =
RARE_PER: Final = 100
#: measured: half: =; 1.5x: =
RARE_MIN: Final = 2
#: what a thing a sentence lists earns of the sentence's match: a base, and a gain for the share
#: of the question's words its own clause holds ("four tools, each with its use")
#: measured: half: =; 1.5x: =
CLAUSE_BASE: Final = 0.3
#: measured: half: dev -1+0; 1.5x: =; neutral: dev -1+0, docs -1+0
CLAUSE_GAIN: Final = 1.2

# -- the alternatives a question names (`weigh.option_candidates`, `qa.decide.graph.options`) --
#: the retrieved units an alternative's evidence is drawn from, and the documents of the best
#: of them whose other units naming an alternative join
#: measured: half: =; 1.5x: =
OPTION_UNITS: Final = 60
#: measured: half: =; 1.5x: =
OPTION_DOCUMENTS: Final = 20
#: the retrieval score of a unit retrieval did not rank (a document's other unit)
#: measured: half: =; 1.5x: =; neutral: =
OPTION_UNRANKED: Final = 0.3
#: an alternative's coverage: its best units' relevance, this many of them, over this scale
#: measured: half: =; 1.5x: =
OPTION_COVERAGE_UNITS: Final = 3
#: measured: half: =; 1.5x: =
OPTION_COVERAGE_SCALE: Final = 10.0
#: alternatives within this share of the best are recommended beside it
#: measured: half: =; 1.5x: docs -6+0, arts -1+0; neutral: =
OPTION_CLOSE: Final = 0.8
#: what a comparison table's verdict is worth: more than cue words and coverage can add
#: measured: half: =; 1.5x: =
TABLE_VOTE: Final = 10.0
#: the question's words in the section above a table count this many times
#: measured: half: =; 1.5x: =; neutral: =
TABLE_SECTION_WEIGHT: Final = 2

# -- a two-part question (`qa.decide.graph.weigh.bridge`) ------------------------------------------
#: the best units whose things the first part may lead to
#: measured: half: =; 1.5x: =
BRIDGE_UNITS: Final = 8
#: a thing it leads to has this many units of its own, or a named thing's unit speaks of it
#: measured: half: =; 1.5x: =
BRIDGE_OWN_UNITS: Final = 5
#: the second part's own units, and each named thing's units about the thing led to
#: measured: half: =; 1.5x: =
BRIDGE_HOP_UNITS: Final = 6
#: measured: half: =; 1.5x: =
BRIDGE_TOLD_UNITS: Final = 2
#: the path shown: this many of the named things' units on the thing led to, and of its own
#: measured: half: docs -1+0; 1.5x: =
BRIDGE_POINTS: Final = 2

# -- the graph's advice (`qa.decide.graph.advice.GraphComposer`) -----------------------------------
#: the n-th pick of a ranked recommendation weighs 1 / (1 + RANK_DECAY * (n - 1))
#: measured: half: =; 1.5x: =; neutral: dev -2+0
RANK_DECAY: Final = 0.6
#: what a NOT_RECOMMENDED edge from a matched situation takes away (times its match)
#: measured: half: =; 1.5x: =; neutral: =
NOT_RECOMMENDED_PENALTY: Final = 2.0
#: what running on named hardware is worth as a reason
#: measured: half: =; 1.5x: =
RUNS_ON_WEIGHT: Final = 0.4
#: a pick that runs on named hardware; of the kind the question asks for
#: measured: half: dev -5+0; 1.5x: =; neutral: dev -1+0
RUNS_ON_GAIN: Final = 1.5
#: measured: half: dev -3+0; 1.5x: =; neutral: dev -3+0
WANTED_TYPE_GAIN: Final = 2.0
#: the picks within this share of the best are recommended, at most MAX_GRAPH_PICKS of them
#: measured: half: =; 1.5x: =; neutral: =
GRAPH_CLOSE: Final = 0.34
#: measured: half: dev -2+0; 1.5x: =
MAX_GRAPH_PICKS: Final = 4
#: situations matched this well each bring their first recommendation
#: measured: half: dev -1+0; 1.5x: =; neutral: dev -1+0
SITUATION_FLOOR: Final = 0.45

# -- the answer's points (`qa.decide.graph.evidence.EvidenceComposer`) -----------------------------
#: the reasons shown for the first pick (one for each other), the graph's picks taken and the
#: paths read for each
#: measured: half: docs -9+0; 1.5x: =
MAX_POINTS: Final = 3
#: measured: half: dev -1+0; 1.5x: =
GRAPH_PICKS: Final = 3
#: measured: half: =; 1.5x: =
PATHS_PER_PICK: Final = 3
#: excerpts shown alone, and beside a recommendation; the graph's route facts shown
#: measured: half: dev -1+0, docs -10+0, arts -3+0; 1.5x: docs -0+1
FACTS_ALONE: Final = 4
#: measured: half: dev -3+0, docs -3+0; 1.5x: docs -0+1
FACTS_WITH_PICKS: Final = 2
#: measured: half: =; 1.5x: =
GRAPH_FACTS: Final = 3
#: the other candidates weighed that a reader may pick among
#: measured: half: =; 1.5x: =
WEIGHED: Final = 4
#: the units a fact is drawn from; at most this many from one document
#: measured: half: docs -3+1; 1.5x: =
FACT_UNITS: Final = 30
#: measured: half: docs -4+0, arts -3+0; 1.5x: dev -0+1, arts -0+1
FACTS_PER_DOCUMENT: Final = 3
#: a unit narrower than this (in Latin characters) tells little unless it is a row, code or
#: the evidence of the asked relation
#: measured: half: =; 1.5x: =
TELLING_WIDTH: Final = 20
#: the reordering of reasons by what each adds looks this far down
#: measured: half: docs -1+0; 1.5x: =
COVERING_UNITS: Final = 12
#: "do the documents agree?": the retrieved units read, the documents shown
#: measured: half: =; 1.5x: =
AGREE_UNITS: Final = 40
#: measured: half: =; 1.5x: =
AGREE_DOCUMENTS: Final = 3
#: a named section's points, and the shortest title that counts as named
#: measured: half: =; 1.5x: =
SECTION_POINTS: Final = 6
#: measured: half: =; 1.5x: =
SECTION_TITLE: Final = 4

# -- weighing a unit against a question (`qa.retrieve.unit_index.UnitIndex`) -----------------------
#: a unit's order: this share from retrieval's score, and this from its relevance
#: measured: half: docs -3+1; 1.5x: docs -1+0
RETRIEVAL_SHARE: Final = 0.5
#: measured: half: docs -2+0; 1.5x: docs -1+1
RELEVANCE_SHARE: Final = 0.5
#: a unit that is the evidence of an edge of the asked relation
#: measured: half: dev -1+0, docs -2+0; 1.5x: =; neutral: dev -1+0, docs -2+0
STATES_ASKED_GAIN: Final = 1.6
#: its section title's words count this much
#: measured: half: docs -1+0; 1.5x: docs -1+0; neutral: dev -1+0, docs -1+0
TITLE_WEIGHT: Final = 0.5
#: a fragment narrower than FRAGMENT_WIDTH (not a heading, not a row) is worth this much
#: measured: half: =; 1.5x: =; neutral: docs -1+0
FRAGMENT_WEIGHT: Final = 0.6
#: measured: half: =; 1.5x: docs -1+0
FRAGMENT_WIDTH: Final = 25
#: each kind of value asked for that a unit states ("2×", "16 GB") multiplies by 1 + this
#: measured: half: docs -1+0; 1.5x: =; neutral: docs -5+0, arts -1+1
HINT_GAIN: Final = 0.8
#: a thing's own units retrieval left out join at this share of the lowest retrieved score; this
#: many of them, and of its documents' units naming it
#: measured: half: docs -1+0; 1.5x: docs -1+0; neutral: docs -1+0
OWN_UNITS_SHARE: Final = 0.5
#: measured: half: =; 1.5x: =
OWN_UNITS: Final = 400
#: measured: half: =; 1.5x: =
OWN_NAMING_UNITS: Final = 100
#: the units read for a thing's definition
#: measured: half: =; 1.5x: =
DEFINITION_UNITS: Final = 80
#: a table row's siblings shown with it lie within this many characters
#: measured: half: =; 1.5x: =
ROW_WINDOW: Final = 4000
#: the row of the recommended thing, its label naming it, comes first by this share of the
#: question's weight
#: measured: half: =; 1.5x: =; neutral: docs -1+0
OWN_ROW_BONUS: Final = 1.0

# -- what the sources do not cover (`qa.decide.graph.answerable.Answerability`) --------------------
#: a price or a rate asked for must be stated by one of the best units
#: measured: half: =; 1.5x: =
QUANTITY_UNITS: Final = 12
