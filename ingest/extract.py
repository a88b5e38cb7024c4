"""Extract typed entities and relations from a parsed document: structure first, then prose.

- tables: a comparison table (entities in the header) gives `entity RATED/HAS_PROPERTY criterion`
  per cell; a catalogue table (entities in the first column) gives per column a situation, a scale
  or an attribute of the row's subject;
- decision trees: every branch is `condition RECOMMENDED_FOR recommendation`;
- lists and definitions: `situation：... use X` and persona lists give recommendations, in order;
- prose: arrows (`A → B`), rankings (`A >> B > C`), exports, default modes, "not recommended".

Every relation carries evidence whose quote is the verbatim slice of the document.
"""

from __future__ import annotations

import re
from itertools import pairwise

from ingest.cues import cue_recommendations
from ingest.patterns import (
    ARROW,
    CLAUSE_SPLIT,
    CONTRAST,
    DEFAULT_CUE,
    DISCOURSE_LABEL,
    EXPORT_CUE,
    MARK_NO,
    MARK_YES,
    NEGATION,
    NOT_RECOMMENDED_NOTE,
    PAIRING_CUE,
    RANK_OPERATOR,
    RECOMMEND_CUE,
    SPEEDUP_VALUE,
    VERSION_AFTER,
    column_role,
    residual_text,
)
from ingest.resolve import DocumentEntities, split_names
from kg import cues
from kg.documents import Block, BlockKind, Document
from kg.lexicon import Lexicon
from kg.schema import (
    IDEA_TYPES,
    SOLUTION_TYPES,
    Evidence,
    Extraction,
    NodeType,
    RelationType,
    relation_allowed,
)

__all__ = ["extract_document"]

_STARS = re.compile(r"[★☆]+")
#: what a default-mode cue points to: an execution mode (a concept where a document names one)
_MODE_TYPES = IDEA_TYPES


def extract_document(doc: Document, blocks: list[Block], lexicon: Lexicon) -> Extraction:
    """All entities and relations one document supports."""
    found = DocumentEntities(doc, lexicon)
    # structure first: what tables and trees discover is then recognised in the prose
    for block in blocks:
        if block.kind == BlockKind.TABLE and len(block.rows) >= 2:
            _table(found, block)
        elif block.kind == BlockKind.DECISION_TREE:
            _tree(found, block)
    for block in blocks:
        if block.kind == BlockKind.LIST:
            _list(found, block)
        elif block.kind in (BlockKind.DEFINITION, BlockKind.PROSE):
            _text(found, block.start, block.end, block.heading_path)
    relations = [
        r
        for r in found.relations
        if relation_allowed(r.relation, found.type_of(r.source), found.type_of(r.target))
    ]
    used = {r.source for r in relations} | {r.target for r in relations}
    used |= {r.criterion for r in relations if r.criterion}
    entities = [
        e
        for e in found.entities.values()
        if e.id in used or e.type not in (NodeType.SCENARIO, NodeType.PERSONA, NodeType.CRITERION)
    ]
    return Extraction(
        doc=doc.id,
        doc_hash=doc.hash,
        entities=sorted(entities, key=lambda e: e.id),
        relations=relations,
    )


# -- mentions inside a span: typed edges from a subject ------------------------------------------
def _mention_edges(
    found: DocumentEntities, subject: str, start: int, end: int, ev: Evidence
) -> None:
    """Edges from `subject` to the things a span mentions, typed by what is mentioned."""
    text = found.doc.text[start:end]
    subject_type = found.type_of(subject)
    for mention, target in found.mentions(start, end):
        target_type = found.type_of(target)
        before = text[: mention.start]
        if target_type == NodeType.HARDWARE:
            relation = RelationType.RUNS_ON
        elif target_type == NodeType.ORGANIZATION:
            relation = RelationType.PART_OF_ECOSYSTEM
        elif target_type == NodeType.FORMAT and EXPORT_CUE.search(before):
            relation = RelationType.EXPORTS_TO
        elif target_type in (NodeType.TECHNIQUE, NodeType.PARALLEL_STRATEGY):
            relation = RelationType.IMPLEMENTS
        elif target_type in SOLUTION_TYPES and target_type not in IDEA_TYPES:
            relation = RelationType.USED_WITH
        else:
            continue
        if relation_allowed(relation, subject_type, target_type):
            found.relate(subject, relation, target, ev)
        if EXPORT_CUE.search(before) and target_type == NodeType.FORMAT:
            # "从 PyTorch/TF 导出 ONNX": the things named before the cue export to the target.
            for other, other_id in found.mentions(start, start + mention.start):
                if found.type_of(other_id) == NodeType.FRAMEWORK and other.end <= mention.start:
                    found.relate(other_id, RelationType.EXPORTS_TO, target, ev)
    _default_mode(found, subject, start, end, ev)


def _default_mode(
    found: DocumentEntities, subject: str, start: int, end: int, ev: Evidence
) -> None:
    """`默认静态图` / `动态图为主` in a subject's cell: the subject's default execution mode."""
    text = found.doc.text[start:end]
    offset = 0
    for clause in re.split(r"[，,；;。]", text):
        if DEFAULT_CUE.search(clause):
            for _mention, target in found.mentions(start + offset, start + offset + len(clause)):
                if found.type_of(target) in _MODE_TYPES:
                    found.relate(subject, RelationType.DEFAULT_MODE, target, ev)
                    break
        offset += len(clause) + 1


# -- tables -------------------------------------------------------------------------------------
def _table(found: DocumentEntities, block: Block) -> None:
    header, spans = block.rows[0], block.cell_spans[0]
    head_ids = [
        found.resolve(cell, found.evidence(*span, block.heading_path), discover=False)
        for cell, span in zip(header[1:], spans[1:], strict=False)
    ]
    known = [h for h in head_ids if h is not None and found.type_of(h) in SOLUTION_TYPES]
    named = len(header) >= 3 and all(_NAME_SHAPED.match(c.strip()) for c in header[1:])
    if (len(known) >= 2 and len(known) >= (len(header) - 1) / 2) or (
        (known or named) and _feature_matrix(block)
    ):
        # "| Feature | Heron | Egret | Ibis |" over rows of ✅ and ❌: the columns are the things
        # compared (typed like the known ones), the rows their features
        kind = found.majority_solution_type(known)
        _comparison_table(found, block, kind if kind != NodeType.CONCEPT else NodeType.FRAMEWORK)
    else:
        _catalogue_table(found, block)


#: a column title that is a name ("Xinference", "FastChat", "Ray Serve"), not a measure
_NAME_SHAPED = re.compile(r"^[A-Z][\w.+\-]*(?: [A-Z\d][\w.+\-]*){0,2}$")
_USERS = cues.pattern("document.users")
_REASON = cues.pattern("document.reason")
_LISTED = re.compile(rf"(?:[\s、,，/+]|{cues.alternatives('document.list_join', ('zh',))})*")


def _feature_matrix(block: Block) -> bool:
    """Whether a table's cells past its first column are mostly ✅ and ❌ marks.

    >>> rows = [["Feature", "A", "B"], ["GPU", "✅", "❌"], ["CPU", "✅", "✅"]]
    >>> _feature_matrix(Block(kind=BlockKind.TABLE, start=0, end=1, text="", rows=rows))
    True
    """
    cells = [c.strip() for row in block.rows[1:] for c in row[1:] if c.strip()]
    return len(cells) >= 4 and sum(
        1 for c in cells if MARK_YES.match(c) or MARK_NO.match(c)
    ) >= 0.6 * len(cells)


def _comparison_table(
    found: DocumentEntities, block: Block, column_type: NodeType = NodeType.FRAMEWORK
) -> None:
    """Header = entities (of `column_type` where nothing better is known), first column =
    criteria."""
    header, head_spans = block.rows[0], block.cell_spans[0]
    subjects = []
    for cell, span in zip(header[1:], head_spans[1:], strict=False):
        ev = found.evidence(*span, block.heading_path)
        parts = split_names(cell)
        ids = [found.resolve(p, ev, default_type=column_type) for p in parts] or [None]
        subjects.append([i for i in ids if i is not None])
    for row, spans in zip(block.rows[1:], block.cell_spans[1:], strict=False):
        if not row or not row[0]:
            continue
        crit_ev = found.evidence(*spans[0], block.heading_path)
        criterion = found.resolve(row[0], crit_ev, default_type=NodeType.CRITERION)
        if criterion is None:
            continue
        if found.type_of(criterion) != NodeType.CRITERION:
            criterion = found.retype(criterion, NodeType.CRITERION)
        for column, (cell, span) in enumerate(zip(row[1:], spans[1:], strict=False)):
            if not cell or column >= len(subjects):
                continue
            ev = found.evidence(*span, block.heading_path)
            stars = _STARS.search(cell)
            for subject in subjects[column]:
                if stars:
                    found.relate(
                        subject,
                        RelationType.RATED,
                        criterion,
                        ev,
                        stars=stars.group(0).count("★"),
                        value=cell,
                    )
                else:
                    found.relate(subject, RelationType.HAS_PROPERTY, criterion, ev, value=cell)
                _mention_edges(found, subject, span[0], span[1], ev)


def _catalogue_table(found: DocumentEntities, block: Block) -> None:
    """First column = subjects; other columns = situations, scales or attributes of them."""
    header, head_spans = block.rows[0], block.cell_spans[0]
    rows = [
        (r, s) for r, s in zip(block.rows[1:], block.cell_spans[1:], strict=False) if r and r[0]
    ]
    row_subjects: list[list[str]] = []
    for row, spans in rows:
        ev = found.evidence(*spans[0], block.heading_path)
        ids = [found.resolve(name, ev) for name in split_names(row[0])]
        row_subjects.append(list(dict.fromkeys(i for i in ids if i is not None)))
    sibling_type = found.majority_solution_type([i for ids in row_subjects for i in ids])
    # one entity may head several rows: retype it once, and every row follows the new id
    retyped: dict[str, str] = {}
    for subjects in row_subjects:
        for eid in subjects:
            if (
                eid not in retyped
                and eid in found.entities
                and found.type_of(eid) == NodeType.CONCEPT
            ):
                retyped[eid] = found.retype(eid, sibling_type)
    row_subjects = [[retyped.get(eid, eid) for eid in subjects] for subjects in row_subjects]
    ecosystem = _heading_owner(found, block)
    attributes: list[str | None] = [None]
    attributes += [
        found.resolve(h, found.evidence(*sp, block.heading_path), default_type=NodeType.CRITERION)
        for h, sp in zip(header[1:], head_spans[1:], strict=False)
    ]
    for subjects, (row, spans) in zip(row_subjects, rows, strict=False):
        flagged = NOT_RECOMMENDED_NOTE.search(row[0]) is not None
        for subject in subjects:
            if ecosystem and ecosystem != subject:
                row_ev = found.evidence(spans[0][0], spans[-1][1], block.heading_path)
                found.relate(subject, RelationType.PART_OF_ECOSYSTEM, ecosystem, row_ev)
            for column in range(1, min(len(row), len(header))):
                if row[column]:
                    cell = (row[column], spans[column], header[column])
                    _catalogue_cell(found, block, subject, cell, flagged, attributes[column])


def _catalogue_cell(
    found: DocumentEntities,
    block: Block,
    subject: str,
    cell: tuple[str, tuple[int, int], str],
    flagged: bool,
    attribute: str | None,
) -> None:
    """One cell of a catalogue row: (text, span, column header)."""
    text, span, header = cell
    ev = found.evidence(*span, block.heading_path)
    role = column_role(header)
    if role == "scale":
        scale = found.situation(text, ev, persona=False)
        if scale:
            found.relate(subject, RelationType.SUITS_SCALE, scale, ev, value=text)
    elif role == "use":
        situation = found.situation(text, ev)
        if situation:
            relation = RelationType.NOT_RECOMMENDED if flagged else RelationType.RECOMMENDED_FOR
            found.relate(situation, relation, subject, ev, value=text)
    if attribute is not None and found.type_of(attribute) == NodeType.CRITERION:
        found.relate(subject, RelationType.HAS_PROPERTY, attribute, ev, value=text)
    _mention_edges(found, subject, span[0], span[1], ev)


def _heading_owner(found: DocumentEntities, block: Block) -> str | None:
    """An organisation or framework the enclosing heading is about ("HuggingFace 生态：...")."""
    for heading in reversed(block.heading_path):
        for mention in found.lexicon.entity_mentions(heading):
            entry = found.lexicon.entries[mention.key]
            if entry.type in (NodeType.ORGANIZATION, NodeType.FRAMEWORK):
                return found.situation(entry.name, _heading_evidence(found, block, heading))
    return None


def _heading_evidence(found: DocumentEntities, block: Block, heading: str) -> Evidence:
    start = found.doc.text.rfind(heading, 0, block.start + 1)
    start = max(start, 0)
    return found.evidence(start, start + len(heading), block.heading_path)


# -- decision trees -----------------------------------------------------------------------------
def _tree(found: DocumentEntities, block: Block) -> None:
    """Every branch: the nearest condition above it RECOMMENDED_FOR what it names."""
    conditions: list[tuple[int, str]] = []  # (depth, scenario id) along the current path
    for depth, text, span in zip(block.depths, block.items, block.item_spans, strict=False):
        while conditions and conditions[-1][0] >= depth:
            conditions.pop()
        ev = found.evidence(*span, block.heading_path)
        parts = ARROW.split(text)
        head = parts[0]
        head_is_condition = (
            depth > 0 and (len(parts) > 1 or not conditions) and _is_condition(found, span[0], head)
        )
        if depth == 0 and len(parts) == 1:
            continue  # the tree's question ("你的首要目标是什么？")
        if head_is_condition:
            prefix = conditions[-1][1] if conditions else None
            name = head if prefix is None else f"{found.entities[prefix].name}：{head}"
            scenario = found.situation(name, ev)
            if scenario is None:
                continue
            conditions.append((depth, scenario))
            targets = parts[1:]
        else:
            targets = parts
        if not conditions or len(targets) == 0:
            continue
        _recommend_names(found, conditions[-1][1], targets, ev)


def _is_condition(found: DocumentEntities, start: int, head: str) -> bool:
    """A branch head is a condition unless it only names things to use ("PyTorch（HF 生态）")."""
    head = re.sub(r"[（(][^）)]*[）)]", "", head)
    mentions = found.find_mentions(head)
    if residual_text(head, [(m.start, m.end) for m in mentions]):
        return True
    situational = {NodeType.HARDWARE, NodeType.PERSONA, NodeType.SCENARIO, NodeType.CRITERION}
    return all(found.mention_type(m) in situational for m in mentions)


def _recommend_names(
    found: DocumentEntities, situation: str, parts: list[str], ev: Evidence
) -> None:
    """Recommend the names in arrow segments; a `+` stack is also USED_WITH pairwise."""
    for part in parts:
        part = re.split(r"[：:。；;，,]", part)[0]
        names = split_names(part)
        ids = [i for i in (found.resolve(n, ev) for n in names) if i is not None]
        ids = [i for i in ids if found.type_of(i) in SOLUTION_TYPES]
        if not ids:
            continue
        for eid in ids:
            found.relate(situation, RelationType.RECOMMENDED_FOR, eid, ev)
        if "+" in part:
            for a, b in pairwise(ids):
                found.relate(a, RelationType.USED_WITH, b, ev)


def _mention_spans(found: DocumentEntities, start: int, end: int) -> list[tuple[int, int]]:
    text = found.doc.text[start:end]
    spans = [(m.start, m.end) for m in found.find_mentions(text)]
    return spans


# -- lists, definitions, prose ------------------------------------------------------------------
def _list(found: DocumentEntities, block: Block) -> None:
    """Situation heads with recommendation children; otherwise each item as text."""
    items = list(zip(block.depths, block.items, block.item_spans, strict=False))
    for index, (depth, text, span) in enumerate(items):
        children = []
        for child_depth, child_text, child_span in items[index + 1 :]:
            if child_depth <= depth:
                break
            if child_depth == depth + 1:
                children.append((child_text, child_span))
        head = text.rstrip()
        if children and re.search(r"[：:]$", head):
            subject = _definition_subject(found, head[:-1], span, block)
            if subject is not None:
                _children_as_recommendations(found, subject, children, block)
                continue
        _text(found, span[0], span[1], block.heading_path)


def _definition_subject(
    found: DocumentEntities, term: str, span: tuple[int, int], block: Block
) -> str | None:
    """A list head `初学者/学生：` names a situation; `TF的主要用户是：` names an entity's users."""
    ev = found.evidence(span[0], span[0] + len(term), block.heading_path)
    mentions = found.find_mentions(term)
    if mentions and _USERS.search(term):
        return found.resolve(mentions[0].surface, ev)
    situational = {NodeType.HARDWARE, NodeType.PERSONA, NodeType.SCENARIO, NodeType.CRITERION}
    if any(found.mention_type(m) not in situational for m in mentions):
        return None
    if _REASON.search(term):
        return None
    return found.situation(term, ev)


def _children_as_recommendations(
    found: DocumentEntities,
    subject: str,
    children: list[tuple[str, tuple[int, int]]],
    block: Block,
) -> None:
    subject_is_solution = found.type_of(subject) in SOLUTION_TYPES
    for rank, (text, span) in enumerate(children, start=1):
        ev = found.evidence(*span, block.heading_path)
        if subject_is_solution:
            # children describe who the subject suits: each child is a situation, unless it is
            # a caveat ("新手也可能从Keras开始，但...")
            if CONTRAST.search(text):
                continue
            situation = found.situation(re.split(r"[。（(]", text)[0], ev)
            if situation:
                found.relate(situation, RelationType.RECOMMENDED_FOR, subject, ev)
            continue
        term_match = re.match(r"([^：:，,]{1,24})[：:]", text)
        if term_match and not RECOMMEND_CUE.search(term_match.group(1)):
            # "单卡/小规模：..." under "性能与扩展性：" is a sub-situation, not a recommendation
            _text(found, span[0], span[1], block.heading_path)
            continue
        body_start = span[0] + (term_match.end() if term_match else 0)
        clause_end = re.search(r"[，,。；;]", found.doc.text[body_start : span[1]])
        body_end = body_start + clause_end.start() if clause_end else span[1]
        for _mention, target in found.mentions(body_start, body_end):
            if found.type_of(target) in SOLUTION_TYPES:
                found.relate(
                    subject,
                    RelationType.RECOMMENDED_FOR,
                    target,
                    ev,
                    value=term_match.group(1) if term_match else None,
                    rank=rank,
                )
                break
        _text(found, span[0], span[1], block.heading_path)


def _text(found: DocumentEntities, start: int, end: int, heading_path: tuple[str, ...]) -> None:
    """Patterns in a line of prose, a definition or a list item."""
    text = found.doc.text[start:end]
    offset = 0
    context_term: str | None = None  # "实验追踪：A；本地先用 B": later clauses refine the term
    for clause in CLAUSE_SPLIT.split(text):
        clause_start = start + offset
        offset += len(clause) + 1
        if not clause.strip():
            continue
        ev = found.evidence(clause_start, clause_start + len(clause), heading_path)
        if _ranking(found, clause_start, clause, ev):
            continue
        if ARROW.search(clause):
            _arrow_clause(found, clause_start, clause, ev)
            continue
        term = _definition_clause(found, clause_start, clause, ev)
        if term is None:
            cue_recommendations(found, clause_start, clause, ev, context_term)
        else:
            context_term = term
        _prose_patterns(found, clause_start, clause, ev)


def _ranking(found: DocumentEntities, start: int, clause: str, ev: Evidence) -> bool:
    """`研究/写论文：PyTorch >> JAX > TensorFlow` -> RANKS_ABOVE edges under that criterion."""
    mentions = found.find_mentions(clause)
    chain = [mentions[0]] if mentions else []
    operators: list[str] = []
    for prev, cur in pairwise(mentions):
        op = RANK_OPERATOR.match(clause[prev.end : cur.start])
        if op is None:
            if len(chain) >= 2:
                break
            chain, operators = [cur], []
            continue
        chain.append(cur)
        operators.append(op.group(1).replace("＞", ">").replace("≥", ">="))
    if len(chain) < 2:
        return False
    label = re.sub(r"^[\s•\-*\d.、]+", "", clause[: chain[0].start]).strip(" ：:")
    criterion = found.situation(label, ev) if label else None
    ids = [found.mentions(start + m.start, start + m.end)[0][1] for m in chain]
    for (a, b), operator in zip(pairwise(ids), operators, strict=False):
        found.relate(a, RelationType.RANKS_ABOVE, b, ev, criterion=criterion, strength=operator)
    if criterion is not None:
        found.relate(criterion, RelationType.RECOMMENDED_FOR, ids[0], ev, value="ranked first")
    return True


def _arrow_clause(found: DocumentEntities, start: int, clause: str, ev: Evidence) -> None:
    """`做研究、读论文复现 → PyTorch` or `通用模型：PyTorch → 导出 ONNX → ONNX Runtime`."""
    term = re.match(r"\s*([^：:→]{1,20})[：:]", clause)
    body = clause[term.end() :] if term else clause
    parts = ARROW.split(body)
    head = parts[0]
    head_offset = (term.end() if term else 0) + clause[term.end() if term else 0 :].find(head)
    spans = _mention_spans(found, start + head_offset, start + head_offset + len(head))
    if residual_text(head, spans):
        situation = found.situation(re.sub(r"^[\s•\-*]+", "", head), ev)
        targets = parts[1:]
    elif term:
        situation = found.situation(term.group(1), ev)
        targets = parts[-1:]
        _chain_exports(found, start, clause, ev)
    else:
        _chain_exports(found, start, clause, ev)
        return
    if situation is not None:
        _recommend_names(found, situation, targets, ev)


def _chain_exports(found: DocumentEntities, start: int, clause: str, ev: Evidence) -> None:
    """`A → 导出 ONNX → B`: A EXPORTS_TO ONNX, ONNX USED_WITH B."""
    mentions = found.mentions(start, start + len(clause))
    for (m1, a), (m2, b) in pairwise(mentions):
        between = clause[m1.end : m2.start]
        if ARROW.search(between):
            relation = (
                RelationType.EXPORTS_TO if EXPORT_CUE.search(between) else RelationType.USED_WITH
            )
            found.relate(a, relation, b, ev)


def _definition_clause(
    found: DocumentEntities, start: int, clause: str, ev: Evidence
) -> str | None:
    """`边缘设备：考虑 TensorRT/OpenVINO ... 或直接用 TFLite` and `命令式：... A 和 B 的默认模式`.

    Returns the term when the clause is a situation definition (later clauses may refine it).
    """
    term = re.match(r"\s*[•\-*]?\s*([^：:，,。]{1,24})[：:]", clause)
    if term is None:
        return None
    body_start = start + term.end()
    body = clause[term.end() :]
    term_text = term.group(1).strip()
    term_mentions = found.find_mentions(term_text)
    mode = found.lexicon.lookup(term_text) or (
        found.lexicon.entries.get(term_mentions[0].key) if term_mentions else None
    )
    if mode is not None and mode.type in _MODE_TYPES and DEFAULT_CUE.search(body):
        target = found.resolve(term_text, ev)
        for mention, subject in found.mentions(body_start, body_start + len(body)):
            if found.type_of(subject) == NodeType.FRAMEWORK and target is not None:
                version = VERSION_AFTER.match(body[mention.end :])
                found.relate(
                    subject,
                    RelationType.DEFAULT_MODE,
                    target,
                    ev,
                    qualifier=version.group(1) if version else None,
                )
        return None
    situational = {NodeType.HARDWARE, NodeType.PERSONA, NodeType.SCENARIO, NodeType.CRITERION}
    if any(found.mention_type(m) not in situational for m in term_mentions):
        return None
    if DISCOURSE_LABEL.search(term_text) or RECOMMEND_CUE.search(term_text):
        return None
    targets = []
    last_end = -1
    for mention, target in found.mentions(body_start, body_start + len(body)):
        kind = found.type_of(target)
        if kind not in SOLUTION_TYPES or kind == NodeType.HARDWARE:
            continue
        if NEGATION.search(body[: mention.start]) or _in_parentheses(body, mention.start):
            continue
        listed = last_end >= 0 and _LISTED.fullmatch(body[last_end : mention.start])
        if RECOMMEND_CUE.search(body[: mention.start]) or mention.start == 0 or listed:
            targets.append(target)
            last_end = mention.end
    if not RECOMMEND_CUE.search(body) and len(targets) < 3:
        # "单卡/小规模：PyTorch和TensorFlow…差异不大" states facts; a plain list of three or more
        # names ("实验追踪：W&B、Neptune、MLflow …") or a cue word ("用", "首选") recommends
        return term_text
    situation = found.situation(term_text, ev) if targets else None
    if situation is None:
        return term_text
    speedup = SPEEDUP_VALUE.search(body)
    for target in targets:
        found.relate(
            situation,
            RelationType.RECOMMENDED_FOR,
            target,
            ev,
            value=speedup.group(0) if speedup else None,
        )
    return term_text


def _in_parentheses(text: str, index: int) -> bool:
    """Whether position `index` of `text` is inside (…) or （…）.

    >>> _in_parentheses("用 A（见 B）", 5)
    True
    """
    depth = 0
    for ch in text[:index]:
        if ch in "（(":
            depth += 1
        elif ch in "）)":
            depth = max(0, depth - 1)
    return depth > 0


_TYPE_WORDS: list[tuple[re.Pattern[str], NodeType]] = [
    (cues.pattern("document.definition_type.engine"), NodeType.INFERENCE_ENGINE),
    (cues.pattern("document.definition_type.framework"), NodeType.FRAMEWORK),
    (cues.pattern("document.definition_type.library"), NodeType.LIBRARY),
    (cues.pattern("document.definition_type.tool"), NodeType.TOOL),
]
_IS_A = re.compile(rf"^\s*{cues.alternatives('document.is_a')}\s*", re.I)


def _type_definitions(found: DocumentEntities, start: int, clause: str) -> None:
    """`FooServe 是一个轻量推理引擎` / `BarNet is a training framework` types a discovered thing."""
    for mention, eid in found.mentions(start, start + len(clause)):
        rest = clause[mention.end :]
        if not _IS_A.match(rest) or found.lexicon.lookup(found.entities[eid].name) is not None:
            continue
        phrase = re.split(r"[，,。.;；]", rest)[0]
        for pattern, node_type in _TYPE_WORDS:
            if pattern.search(phrase) and found.type_of(eid) != node_type:
                found.retype(eid, node_type)
                break


def _prose_patterns(found: DocumentEntities, start: int, clause: str, ev: Evidence) -> None:
    """Exports, pairings, and hardware named after a thing in a sentence."""
    _type_definitions(found, start, clause)
    mentions = found.mentions(start, start + len(clause))
    if len(mentions) < 2:
        return
    subject: str | None = None
    for _mention, eid in mentions:
        kind = found.type_of(eid)
        if kind == NodeType.HARDWARE and subject is not None:
            found.relate(subject, RelationType.RUNS_ON, eid, ev)
        elif kind in SOLUTION_TYPES - IDEA_TYPES and kind != NodeType.HARDWARE:
            subject = eid
    export = EXPORT_CUE.search(clause)
    if export:
        _chain_exports(found, start, clause, ev)
        before = [(m, e) for m, e in mentions if m.end <= export.start()]
        after = [(m, e) for m, e in mentions if m.start >= export.end()]
        formats = [e for _m, e in mentions if found.type_of(e) == NodeType.FORMAT]
        for fmt in formats:
            for _m, fw in before:
                if found.type_of(fw) == NodeType.FRAMEWORK:
                    found.relate(fw, RelationType.EXPORTS_TO, fmt, ev)
            for _m, engine in after:
                if found.type_of(engine) == NodeType.INFERENCE_ENGINE:
                    found.relate(fmt, RelationType.USED_WITH, engine, ev)
    if PAIRING_CUE.search(clause):
        first = mentions[0][1]
        for _m, other in mentions[1:]:
            if found.type_of(other) in SOLUTION_TYPES and found.type_of(first) in SOLUTION_TYPES:
                found.relate(first, RelationType.USED_WITH, other, ev)
