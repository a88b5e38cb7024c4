"""Find the things a document names: its subject, and the tools, models and hardware it lists.

Names come from where documentation puts them, not from a list of known projects:

- the document's **subject** — the project a README or docs page is about — from its title, its
  first headings, its "X is a … for …" definition, its file or folder name, and how often the name
  recurs; typed from the definition sentence ("a minimalist ML **framework**"). A README's file
  names its project; a docs page's or an article's names its topic (`01-Deploy.md`), led at
  most by its project (`vllm-parallelism_scaling.md`): a page's title that nothing types is
  no product (the project of a docs folder is the pages' subject: `ingest.context`); a
  catalogue ("A curated list of …") has none: what it lists are the things;
- **list leads** (`- **NNCF** - model optimization …`, `- [Optimum Intel](…) - …`), the first
  column and the header of tables, short headings, and `Long Name (ABBR)` / `名称（Alias）` pairs;
  a lead that its item describes as a thing of a kind, a cell of a column that lists names, and
  a name that its "X is a … library" definition types are names by their place, whatever their
  shape (`Kestrant`, `Harbo`);
- **name-shaped tokens** anywhere: `CamelCase`, letters with digits (`FlashAttention-2`,
  `RTX 4090`), dotted names (`llama.cpp`, `Paddle.js`);
- **installed packages**: what a code block's `pip install` installs is a library
  (`bitsandbytes`), however plainly its name is written, unless it is an English word the
  corpus also inflects (`kernels`).

`looks_like_entity` is the one predicate every discovered name must pass: no pronouns, sentence
fragments, numbers, dates, sizes, versions, markup or placeholders.
"""

from __future__ import annotations

import math
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement

from ingest.patterns import CJK, LIST_JOIN
from kg import cues
from kg.documents import Document, EvidenceUnit, UnitKind
from kg.lexicon import Lexicon, surface_pattern
from kg.schema import IDEA_TYPES, SOLUTION_TYPES, NodeType, normalize_name

__all__ = [
    "README_WORDS",
    "Discovered",
    "DocumentSubject",
    "common_word",
    "describes_catalogue",
    "discover_names",
    "document_subject",
    "installed_packages",
    "installed_thing",
    "is_readme",
    "looks_like_entity",
    "reads_as_chinese",
    "type_from_description",
]

#: Words that head README sections and feature labels: a phrase made only of them is no name.
README_WORDS = frozenset(cues.words("names.readme_words", "en"))
_FUNCTION_START = re.compile(rf"^{cues.alternatives('names.function_start')}\b", re.I)
_MONTHS = cues.alternatives("names.month")
_NOT_A_NAME = re.compile(
    r"^[\d\s.,:;%×+\-–/()~≈<>=]+[xX]?$"  # numbers, ranges, versions, "2x"
    r"|^v?\d+(?:\.\d+)+\w*$"  # v0.1.0
    r"|^\d+(?:\.\d+)?\s*(?:[kmgtp]i?b|bytes?|[kmb]|bn|bpw|bits?|gb/s|tok/s|t/s|ms|s|h|min|%)$"
    rf"|^(?:{_MONTHS})\b[\s\d,]*$|^\d{{4}}[-/.]\d{{1,2}}(?:[-/.]\d{{1,2}})?$|^\d{{4}}$"
    rf"|^\d+\s*{cues.alternatives('names.count_classifier')}"
    r"|^[KMGTP]i?B$|^(?:float|int|uint|fp|bf)\d+$",
    re.I,
)
_MARKUP = re.compile(
    r"[\[\]{}<>*`|\\]|(?<![A-Za-z])#|https?:|www\.|\.(?:md|png|svg|jpg|gif|html|py|txt|json|ya?ml)\b|^[+\-=~:]",
    re.I,
)
_CONJUNCTION = re.compile(
    rf"\s{cues.alternatives('names.joining_word')}\s|\s{cues.alternatives('names.article_word')}\s|"
    rf"{cues.alternatives('document.list_join', ('zh',))}|/",
)
_PLACEHOLDER = re.compile(
    r"^(?=[A-Z0-9_]*[A-Z]{3})[A-Z0-9]+(?:_[A-Z0-9]+)+$|"
    rf"(?i:^{cues.alternatives('names.placeholder')}$)|^v\d{{1,2}}$|"
    r"(?i:^\d+[-\s]?(?:bits?|bpw|b|x|k|m|gb|mb)$)|"
    r"^[a-z]\.[a-z]\.?$",
)
#: a community channel or contact link ("YouTube", "GitHub Issues", "QQ群"): no entity
CHANNEL = re.compile(rf"^{cues.alternatives('names.channel')}$", re.I)
_SENTENCE_PUNCT = re.compile(r"[,;!?，。；！？、]|[.:](?=\s)|\s[-–—]\s")
_LATIN_TOKEN = re.compile(r"[A-Za-z][\w.+\-]*")
#: A token shaped like a name: inner capitals, letters with digits, or a dotted identifier.
NAME_TOKEN = re.compile(
    r"(?<![\w.\-/])"
    r"(?:[A-Za-z]+[a-z][A-Z][\w\-]*|[A-Z]{2,}[a-z]+[\w\-]*"  # PyTorch, ExLlamaV2, MLPerf, vLLM
    r"|[A-Za-z][a-z]*[A-Za-z]-?\d+(?:\.\d+)?[A-Za-z]*"  # FlashAttention-2, Qwen3, Llama2
    r"|[a-z][a-z0-9]+\.(?:cpp|js|py|rs|jl|net)"  # llama.cpp, Paddle.js
    r"|[A-Z][a-z]+\.js)"
    r"(?![\w\-])"
)
_ACRONYM_PAIR = re.compile(
    r"(?P<long>[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*){1,6})\s*[（(]\s*(?P<short>[A-Z][A-Za-z0-9\-]{1,12})\s*[）)]"
)
_ALIAS_PAIR = re.compile(
    r"(?P<a>[A-Za-z][\w.\-]*(?:\s[A-Z][\w.\-]*){0,3}|[\u4e00-\u9fff]{2,8})\s*[（(]\s*"
    r"(?P<b>[A-Za-z][\w.\-]*(?:\s[A-Z][\w.\-]*){0,3}|[\u4e00-\u9fff]{2,8})\s*[）)]"
)
_DEFINITION = re.compile(
    r"^(?P<name>[A-Za-z][\w.+\-]{0,39}(?:\s[A-Z][\w.+\-]{0,29}){0,3}?|[\u4e00-\u9fff]{2,8})"
    r"\s*(?:[（(](?P<alias>[^）)]{1,40})[）)])?\s*"
    # an English verb is a word of its own: "This design …" is no "Th" that "is"
    rf"(?P<verb>{cues.alternatives('names.definition_verb')})",
)
_IS_A = re.compile(rf"^{cues.alternatives('names.is_a')}$")
#: an opening that says a document is a catalogue of things (`describes_catalogue`)
_CATALOGUE = re.compile(rf"^{cues.alternatives('names.catalogue')}", re.I)
_NEWS = re.compile(
    rf"^\[?\d{{4}}[/.\-]\d{{1,2}}|^(?:{_MONTHS})\b.*\d{{4}}|^{cues.alternatives('names.news_date')}",
    re.I,
)
_NEWS_SECTION = cues.pattern("names.news_section")

_TYPE_WORDS: list[tuple[re.Pattern[str], NodeType]] = [
    (cues.pattern("names.type.format"), NodeType.FORMAT),
    (cues.pattern("names.type.training"), NodeType.FRAMEWORK),
    (cues.pattern("names.type.engine"), NodeType.INFERENCE_ENGINE),
    (cues.pattern("names.type.framework"), NodeType.FRAMEWORK),
    (cues.pattern("names.type.library"), NodeType.LIBRARY),
    (cues.pattern("names.type.tool"), NodeType.TOOL),
    (cues.pattern("names.type.hardware"), NodeType.HARDWARE),
    (cues.pattern("names.type.technique"), NodeType.TECHNIQUE),
    (cues.pattern("names.type.model"), NodeType.MODEL),
]
#: an article or a preposition before a kind word: the kind word is no head of the phrase
_BEFORE_A_HEAD = re.compile(
    rf"\b(?:{cues.alternatives('names.described')}|{cues.alternatives('names.post_modifier')})\b",
    re.I,
)
_NAME_HEAD: list[tuple[re.Pattern[str], NodeType]] = [
    (re.compile(cues.alternatives("names.head.framework") + "$", re.I), NodeType.FRAMEWORK),
    (re.compile(cues.alternatives("names.head.engine") + "$", re.I), NodeType.INFERENCE_ENGINE),
    (re.compile(cues.alternatives("names.head.library") + "$", re.I), NodeType.LIBRARY),
    (re.compile(cues.alternatives("names.head.tool") + "$", re.I), NodeType.TOOL),
    (re.compile(rf"^{cues.alternatives('names.head.hardware')}\b", re.I), NodeType.HARDWARE),
    (re.compile(r"^[ABHL]\d{2,3}$|^MI\d{3}|^B\d{3}$"), NodeType.HARDWARE),
]


def looks_like_entity(name: str) -> bool:
    """Whether a surface can name a thing: no pronoun, fragment, number, date, size or markup.

    >>> [looks_like_entity(n) for n in ["FlashAttention-2", "Optimum Intel", "飞桨", "RTX 4090"]]
    [True, True, True, True]
    >>> [looks_like_entity(n) for n in ["We highly", "5.68 GB", "Compile]", "April 2025*", "09"]]
    [False, False, False, False, False]
    >>> [looks_like_entity(n) for n in ["Description", "[privacy-filter.cpp]", "🔮 Our Models"]]
    [False, False, False]
    >>> [looks_like_entity(n) for n in ["YouTube", "GitHub Issues", "Forums"]]
    [False, False, False]
    """
    name = name.strip()
    if not name or len(name) > 48 or _MARKUP.search(name) or _NOT_A_NAME.match(name):
        return False
    if CHANNEL.match(name):
        return False
    if not re.search(r"[A-Za-z\u4e00-\u9fff]", name) or re.search(r"[^\w\s.+\-'&/()（）·]", name):
        return False
    if _SENTENCE_PUNCT.search(name) or _FUNCTION_START.match(name) or _CONJUNCTION.search(name):
        return False
    if _PLACEHOLDER.match(name):
        return False
    words = name.split()
    if CJK.search(name):
        return len(re.sub(r"\s", "", name)) <= 16 and len(words) <= 3
    return len(words) <= 5 and not (len(words) == 1 and name.lower() in README_WORDS)


def type_from_description(text: str) -> NodeType | None:
    """The node type a description names by its head words ("a minimalist ML framework").

    >>> type_from_description("an inference library for running local LLMs")
    <NodeType.INFERENCE_ENGINE: 'InferenceEngine'>
    >>> type_from_description("a C++ and Python library for efficient inference")
    <NodeType.LIBRARY: 'Library'>
    >>> type_from_description("一个性能强大且功能全面的分布式推理框架") is NodeType.INFERENCE_ENGINE
    True
    """
    # English puts the head noun first ("a library for efficient inference" is a library),
    # Chinese last ("专为 MoE 模型打造的训练引擎" is an engine): the first clause decides
    clause = _FIRST_CLAUSE_END.split(text[:200], maxsplit=1)[0]
    chinese = _chinese(clause)  # (a clause is its own first clause)
    best: tuple[int, NodeType] | None = None
    for pattern, node_type in _TYPE_WORDS:
        for m in pattern.finditer(clause):
            at = -m.end() if chinese else m.start()
            if best is None or at < best[0]:
                best = (at, node_type)
    return best[1] if best else None


def _chinese(text: str) -> bool:
    """Whether a description is written in Chinese (`reads_as_chinese`, its first clause): its
    head noun comes last, as `type_from_description` reads it."""
    return reads_as_chinese(_FIRST_CLAUSE_END.split(text[:200], maxsplit=1)[0])


def reads_as_chinese(text: str) -> bool:
    """Whether a text is written in Chinese: more Han characters than a third of its Latin
    letters.

    >>> reads_as_chinese("kestrel 支持多卡推理"), reads_as_chinese("Kestrel supports 量化")
    (True, False)
    """
    return len(CJK.findall(text)) > len(re.findall(r"[A-Za-z]", text)) / 3


def type_of_head(text: str) -> NodeType | None:
    """The node type of a description without an article that is a noun phrase headed by a
    kind word: the first clause's last word, or a kind word that a participle or a preposition
    follows, with no article or preposition before it; in Chinese, the word the clause ends with.

    >>> type_of_head("tiny computer-vision model trained with self-supervision, for images")
    <NodeType.MODEL: 'Model'>
    >>> type_of_head("image to text model"), type_of_head("fast inference engine using CUDA")
    (<NodeType.MODEL: 'Model'>, <NodeType.INFERENCE_ENGINE: 'InferenceEngine'>)
    >>> type_of_head("small vision model that answers questions about pictures")
    <NodeType.MODEL: 'Model'>
    >>> type_of_head("面向国产芯片的高性能训练加速库")
    <NodeType.LIBRARY: 'Library'>
    >>> type_of_head("开源方案打破了 LLM 的长度限制") is None
    True
    >>> [type_of_head(t) for t in ["run models locally", "use models packed in it", "an engine"]]
    [None, None, None]
    """
    clause = re.split(r"[,;:.!?(（，。；：]|\s[-–—]\s", text, maxsplit=1)[0].strip()
    if _chinese(clause):  # the head comes last: the clause ends with it
        ends = [
            (m.start(), t)
            for pattern, t in _TYPE_WORDS
            for m in pattern.finditer(clause)
            if m.end() == len(clause)
        ]
        return min(ends, key=lambda e: e[0])[1] if ends else None
    words = [w.lower() for w in clause.split()]
    if not words or CJK.search(clause):
        return None

    def kind(word: str) -> NodeType | None:  # a singular: a plural describes no one thing
        if word.endswith("ies") or (word.endswith("s") and kind(word[:-1]) is not None):
            return None
        return next((t for pattern, t in _TYPE_WORDS if pattern.fullmatch(word)), None)

    def modifies(word: str) -> bool:  # "… model trained on", "… engine for", "… model that"
        return bool(re.fullmatch(r"[a-z]{2,}(?:ed|ing)", word) or _BEFORE_A_HEAD.fullmatch(word))

    heads = [len(words) - 1] + [i for i in range(len(words) - 1) if modifies(words[i + 1])]
    for at in heads:
        if (found := kind(words[at])) is not None:
            before = " ".join(words[:at])
            return None if at > 6 or _BEFORE_A_HEAD.search(before) else found
    return None


def type_of_list(intro: str) -> NodeType | None:
    """The kind of thing a list holds, as the sentence that introduces it says: the plural of a
    kind word right before its closing colon ("… using state of the art models:"); in Chinese,
    the kind word its last clause ends with before the colon ("目前支持以下推理框架：").

    >>> type_of_list("We also provide examples using state of the art models:")
    <NodeType.MODEL: 'Model'>
    >>> type_of_list("The following libraries:"), type_of_list("目前支持以下推理框架：")
    (<NodeType.LIBRARY: 'Library'>, <NodeType.INFERENCE_ENGINE: 'InferenceEngine'>)
    >>> [type_of_list(t) for t in ["These demos run in your browser:", "Use models.", "A model:"]]
    [None, None, None]
    >>> type_of_list("镜像仓库：") is None  # a repository (仓库), not a library (库)
    True
    """
    text = intro.strip()
    if not text.endswith((":", "：")):
        return None
    clause = re.split(r"[，,；;。.!?]", text[:-1])[-1].strip()
    if _chinese(clause):
        return type_of_head(clause)
    words = clause.split()
    last = words[-1].lower() if words else ""
    if not last.endswith("s") or last.endswith("ss"):
        return None  # a list of things is introduced by their plural
    singular = last[:-3] + "y" if last.endswith("ies") else last[:-1]
    return next((t for pattern, t in _TYPE_WORDS if pattern.fullmatch(singular)), None)


def type_from_name(name: str) -> NodeType | None:
    """The node type a name's own head word gives ("… Compression Framework", "RTX 4090").

    >>> type_from_name("OpenVINO Model Server"), type_from_name("RTX 4090")
    (<NodeType.INFERENCE_ENGINE: 'InferenceEngine'>, <NodeType.HARDWARE: 'Hardware'>)
    """
    for pattern, node_type in _NAME_HEAD:
        if pattern.search(name):
            return node_type
    return None


#: a command that installs Python packages: `pip install`, `python -m pip install`, `uv pip
#: install`, a notebook's `!pip install` / `%pip install`, after a `$ ` prompt or `sudo`
_INSTALL = re.compile(
    r"^\s*(?:\$\s+)?[!%]?(?:sudo\s+)?(?:(?:python[\d.]*|py)\s+-m\s+|uv\s+)?pip\d?(?:\.\d+)?"
    r"\s+install\s+(?P<args>.*)$"
)
#: pip's options that take a value (`-r requirements.txt`, `--index-url URL`): the value is
#: no package
_PIP_VALUED_FLAGS = (
    "-r --requirement -c --constraint -e --editable -i --index-url --extra-index-url "
    "-f --find-links --upgrade-strategy -t --target --prefix --root --platform "
    "--python-version --implementation --abi --only-binary --no-binary -C "
    "--config-settings --trusted-host --proxy --cache-dir --src --progress-bar "
    "--root-user-action --report --python --index-strategy"
)
_PIP_VALUED = frozenset(_PIP_VALUED_FLAGS.split())
_SHELL_BREAK = frozenset({"&&", "||", ";", "|", "&", ">", ">>", "2>&1"})


def installed_packages(code: str) -> list[str]:
    """The Python packages a code block installs with pip, by their distribution names: a
    requirement's extras and version pins dropped (`gizmo[cuda]`, `tarnlib>=0.3`); files,
    URLs, paths and options' values are no packages; a command ends at a shell operator or a
    comment.

    >>> installed_packages("pip install -U 'gizmo[cuda]' tarnlib>=0.3 -r req.txt ./wheel")
    ['gizmo', 'tarnlib']
    >>> installed_packages("!pip install --upgrade-strategy only-if-needed wren && wren --help")
    ['wren']
    >>> installed_packages("python -m pip install \\\\\\n    git+https://x.org/a.git gizmo==1.2")
    ['gizmo']
    >>> installed_packages("import pip  # pip install nothing here")
    []
    """
    names: list[str] = []
    for line in re.sub(r"\\\n", " ", code).splitlines():
        m = _INSTALL.match(line)
        if m is None:
            continue
        try:
            words = shlex.split(m.group("args"), comments=True)
        except ValueError:  # an unclosed quote: the words as written
            words = m.group("args").split()
        valued = False
        for word in words:
            if word in _SHELL_BREAK:
                break
            if valued or word.startswith("-"):
                valued = word in _PIP_VALUED  # `--opt=value` holds its value
                continue
            if re.search(r"[/\\:$@]|^\.|\.(?:whl|zip|gz|txt)$", word):
                continue  # a path, a file, a URL or a shell variable
            try:
                name = Requirement(word).name
            except InvalidRequirement:
                continue
            if name not in names:
                names.append(name)
    return names


def _inflects(word: str, plain_words: AbstractSet[str]) -> bool:
    """Whether the corpus's running text also writes a word inflected ("kernel" beside
    "kernels", "package" beside "packaging"): an English word, not a coined name.

    >>> _inflects("kernels", {"kernel", "kernels"}), _inflects("tarnlib", {"tarnlib"})
    (True, False)
    """
    stems = {word + "s", word + "es", word + "ed", word + "d", word + "ing"}
    for ending, back in (
        ("ies", "y"),
        ("es", ""),
        ("s", ""),
        ("ed", ""),
        ("ed", "e"),
        ("ing", ""),
        ("ing", "e"),
    ):
        if word.endswith(ending) and len(word) > len(ending) + 2:
            stems.add(word[: -len(ending)] + back)
    return any(stem in plain_words for stem in stems - {word})


def installed_thing(
    name: str,
    lexicon: Lexicon,
    plain_words: AbstractSet[str],
    known_names: AbstractSet[str] = frozenset(),
) -> bool:
    """Whether a package a code block installs (`installed_packages`) is a thing to know by
    name: a library or tool the lexicon does not know already, no build of a known thing
    (`tensorflow-cpu`, a corpus subject's `-nightly`: its name leads with the known name, which
    finds it), and no English word the corpus inflects (`pip install kernels` installs a package
    whose name is an ordinary word: its "kernel" in running text speaks of no package).

    >>> installed_thing("tarnlib", Lexicon.default(), {"tarnlib"})
    True
    >>> installed_thing("kernels", Lexicon.default(), {"kernel", "kernels"})
    False
    >>> installed_thing("tensorflow-cpu", Lexicon.default(), set())
    False
    """
    if lexicon.lookup(name) is not None or not looks_like_entity(name):
        return False
    head = re.split(r"[-_.]", name, maxsplit=1)[0]
    if head != name and (lexicon.lookup(head) is not None or normalize_name(head) in known_names):
        return False
    return not (name.lower() in plain_words and _inflects(name.lower(), plain_words))


@dataclass
class Discovered:
    """A name this document gives to a thing, with its evidence unit and what types it."""

    name: str
    unit: EvidenceUnit
    aliases: list[str] = field(default_factory=list)
    type: NodeType | None = None
    how: str = ""


@dataclass
class DocumentSubject:
    """The project a document is about."""

    name: str
    aliases: list[str]
    type: NodeType
    unit: EvidenceUnit


def file_stem(doc_id: str) -> str:
    """The project a file name points at: `candle-README.md` -> `candle`,
    `xinference/README_zh_CN.md` -> `xinference`, `docs/index.md` -> `docs`.

    >>> file_stem("llama-factory-README_zh.md"), file_stem("onnx/README.md")
    ('llama-factory', 'onnx')
    """
    parts = doc_id.split("/")
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", parts[-1])
    stem = re.sub(r"(?i)[-_.]?(?:readme|index)(?:[-_.].*)?$", "", stem)
    stem = re.sub(r"(?i)[-_.](?:zh|cn|en|ja|ko|de|fr)(?:[-_][A-Za-z]{2,4})?$", "", stem)
    if not stem and len(parts) > 1:
        return file_stem("/".join(parts[:-1]) + "/" + parts[-2])
    return stem


def is_readme(doc_id: str) -> bool:
    """Whether a file is a project's README (its name names the project), not a docs page or
    an article (its name names the page's topic).

    >>> is_readme("candle-README.md"), is_readme("xinference/README_zh_CN.md")
    (True, True)
    >>> is_readme("trl-lora_without_regret.md"), is_readme("docs/index.rst")
    (False, False)
    """
    return "readme" in doc_id.rsplit("/", 1)[-1].lower()


def _names_the_file(names: set[str], stem: str, anywhere: bool) -> bool:
    """Whether the file name points at a candidate with one of these normalised names. A
    README's name is its project's (`candle-README.md`): the name may stand `anywhere` in it,
    as may the name of a thing the page types; a page's name is its topic, led at most by its
    project's (`vllm-parallelism_scaling.md`, `trl-lora_without_regret.md`): there only a name
    the file's name starts with counts, never one inside or at the end of it.

    >>> _names_the_file({"lorawithoutregret"}, "trllorawithoutregret", anywhere=False)
    False
    >>> _names_the_file({"vllm"}, "vllmparallelismscaling", anywhere=False)
    True
    >>> _names_the_file({"lorawithoutregret"}, "trllorawithoutregret", anywhere=True)
    True
    """
    if anywhere:
        return stem in names or any(len(n) >= 4 and (n in stem or stem in n) for n in names)
    return any(len(n) >= 3 and stem.startswith(n) and len(stem) > len(n) for n in names)


def _phrase_count(name: str, units: Iterable[EvidenceUnit]) -> int:
    """Occurrences of a name (any case, spacing-tolerant) in a document's readable units."""
    pattern = re.compile(surface_pattern(name), re.I)
    return sum(len(pattern.findall(u.text)) for u in units if u.kind != UnitKind.CODE)


def _name_in(text: str, lexicon: Lexicon) -> str | None:
    """The name a heading or definition leads with (its text before ':', '（', ' - ')."""
    head = re.split(r"\s*(?:[:：|•]|\s[-–—]\s)\s*", text, maxsplit=1)[0].strip()
    head = re.sub(r"\s*[（(][^）)]*[）)]\s*$", "", head).strip()
    latin = re.match(r"^([A-Za-z][\w.+\-]*(?:\s[A-Za-z][\w.+\-]*)*)\s*[\u4e00-\u9fff]", head)
    if latin is not None:  # "MindSpore介绍", "PaddlePaddle最新版本"
        head = latin.group(1)
    if lexicon.lookup(head) is not None or looks_like_entity(head):
        return head
    mentions = lexicon.entity_mentions(head)
    if mentions and mentions[0].start == 0 and len(head.split()) <= 4:
        return head[: mentions[0].end]
    return None


def document_subject(
    doc: Document, units: list[EvidenceUnit], lexicon: Lexicon
) -> DocumentSubject | None:
    """The project a document is about, or None (an essay that compares several things, or a
    catalogue of them: `describes_catalogue`)."""
    if describes_catalogue(units):
        return None
    stem = normalize_name(file_stem(doc.id))
    scores: dict[str, float] = defaultdict(float)
    found: dict[str, tuple[str, EvidenceUnit, NodeType | None]] = {}
    aliases: dict[str, set[str]] = {}
    readable = [u for u in units if u.kind != UnitKind.CODE][:24]

    def consider(name: str, unit: EvidenceUnit, weight: float, node_type: NodeType | None) -> None:
        key = normalize_name(name)
        if len(key) < 2:
            return
        scores[key] += weight
        known = found.get(key)
        if known is None or (node_type is not None and known[2] is None):
            found[key] = (name, unit, node_type)

    headings = [u for u in readable if u.kind == UnitKind.HEADING][:3]
    for rank, unit in enumerate(headings):
        name = _name_in(unit.text, lexicon)
        if name is not None:
            consider(name, unit, 2.0 - 0.5 * rank, None)
    for unit in readable:
        m = _DEFINITION.match(unit.text)
        if m is not None:
            name = m.group("name").strip()
            known = lexicon.lookup(name) is not None
            if known or (looks_like_entity(name) and not CJK.search(name)):
                rest = unit.text[m.end() :]
                is_a = _IS_A.match(m.group("verb")) is not None
                consider(
                    name, unit, 3.0 if is_a else 2.0, type_from_description(rest) if is_a else None
                )
                if m.group("alias"):
                    aliases.setdefault(normalize_name(name), set()).add(m.group("alias").strip())
        for pair in _ALIAS_PAIR.finditer(unit.text):
            a, b = pair.group("a"), pair.group("b")
            aliases.setdefault(normalize_name(a), set()).add(b)
            aliases.setdefault(normalize_name(b), set()).add(a)
    readme = is_readme(doc.id)
    if stem:
        # a file named after a known thing names that thing, not a longer name holding its
        # name ("intel.rst" is about Intel, not the Intel Neural Compressor of one section)
        named = lexicon.lookup(stem)
        for key in [*found, stem]:
            names = {key} | {normalize_name(a) for a in aliases.get(key, set())}
            entry = lexicon.lookup(key)
            if entry is not None:
                names |= {normalize_name(s) for s in entry.surfaces}
            # a page's file names a thing the page types, or its project: not its title
            typed = entry is not None or (key in found and found[key][2] is not None)
            other = named is not None and stem not in names
            if key == stem or (not other and _names_the_file(names, stem, readme or typed)):
                scores[key] += 4.0
        if stem not in found and readme:
            entry = lexicon.lookup(stem)
            surface = entry.name if entry else _spelled(stem, units)
            first = next((u for u in units if stem in normalize_name(u.text)), None)
            if surface and first is not None and _phrase_count(surface, units) >= 3:
                found[stem] = (surface, first, None)
                scores[stem] += 4.0
    for key, (name, _unit, _type) in found.items():
        scores[key] += math.log1p(_phrase_count(name, units))
    if not scores:
        return None
    ranking = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    key, score = ranking[0]
    if score < 4.0 or key not in found:
        return None
    typed = lexicon.lookup(key) is not None or found[key][2] is not None
    by_file = _named_by_file(key, stem, aliases, lexicon, readme or typed)
    if not by_file and len(ranking) > 1 and ranking[1][1] >= 0.8 * score:
        return None  # an essay about several things: none of them is the document's subject
    name, unit, node_type = found[key]
    entry = lexicon.lookup(name)
    if entry is not None:
        return DocumentSubject(entry.name, [], entry.type, unit)
    if name.islower() or name.isupper():
        name = _best_casing(name, units)
    alias_set = sorted(a for a in aliases.get(key, set()) if normalize_name(a) != key)
    resolved = node_type or type_from_name(name) or _defined_type(name, units)
    if resolved is None and not readme and not by_file and _is_title(key, units):
        return None  # a page's title names its topic: nothing says it is a product
    return DocumentSubject(name, alias_set, resolved or NodeType.TOOL, unit)


def describes_catalogue(units: list[EvidenceUnit]) -> bool:
    """Whether a document says at its opening that it is a catalogue of things, by its title or
    one of its first three sentences ("A curated list of serving tools", "Foo is a list of …",
    "本仓库整理了…", "服务工具汇总"): what it lists are the things, the list itself none, whatever
    its file is named (a list's repository has a README too).

    >>> def u(kind, text):
    ...     return EvidenceUnit(id=text, doc="d", start=0, end=1, kind=kind, text=text)
    >>> opening = [u("heading", "Awesome Serving"), u("sentence", "Welcome!"),
    ...     u("sentence", "A short curated list of serving tools."), u("item", "Foo - a tool")]
    >>> describes_catalogue(opening), describes_catalogue(opening[:2] + opening[3:])
    (True, False)
    >>> describes_catalogue([u("heading", "Kestrel"), u("sentence", "Kestrel is a curated list of "
    ...     "quantized models."), u("sentence", "Kestrel is a collection of fast kernels.")])
    True
    >>> describes_catalogue([u("heading", "Kestrel"), u("sentence", "Kestrel is a collection of "
    ...     "fast kernels, layers and optimizers.")])
    False
    >>> describes_catalogue([u("heading", "服务工具汇总"), u("sentence", "以下按平台分类。")])
    True
    """
    opening = [u for u in units[:16] if u.kind in (UnitKind.HEADING, UnitKind.SENTENCE)]
    title = [u.text for u in opening if u.kind == UnitKind.HEADING][:1]
    sentences = [u.text for u in opening if u.kind == UnitKind.SENTENCE][:3]
    for text in [*title, *sentences]:
        text = text.strip()
        defined = _DEFINITION.match(text)
        if _CATALOGUE.match(text) or (
            defined is not None
            and _IS_A.match(defined.group("verb"))
            and _CATALOGUE.match(text[defined.end() :].strip())
        ):
            return True
    return False


def _is_title(key: str, units: list[EvidenceUnit]) -> bool:
    """Whether a normalised name is the document's title (its first heading)."""
    title = next((u.text for u in units if u.kind == UnitKind.HEADING), "")
    return bool(title) and normalize_name(title).startswith(key)


def _named_by_file(
    key: str, stem: str, aliases: dict[str, set[str]], lexicon: Lexicon, anywhere: bool = True
) -> bool:
    """Whether the file's name points at this candidate (its name, an alias or a lexicon name)."""
    if not stem:
        return False
    names = {key} | {normalize_name(a) for a in aliases.get(key, set())}
    entry = lexicon.lookup(key)
    if entry is not None:
        names |= {normalize_name(s) for s in entry.surfaces}
    return _names_the_file(names, stem, anywhere)


def _spelled(key: str, units: list[EvidenceUnit]) -> str | None:
    """The most common spelling in the text of a normalised name.

    `llamafactory` -> `LlamaFactory`
    """
    spellings: Counter[str] = Counter()
    for unit in units:
        if unit.kind == UnitKind.CODE:
            continue
        for token in re.findall(r"[A-Za-z][A-Za-z0-9.\-]*[A-Za-z0-9]", unit.text):
            if normalize_name(token) == key:
                spellings[token] += 1
    return spellings.most_common(1)[0][0] if spellings else None


def _defined_type(name: str, units: list[EvidenceUnit]) -> NodeType | None:
    for unit in units:
        if unit.text.startswith(name):
            m = _DEFINED_AS.match(unit.text[len(name) :])
            if m and (found := type_from_description(m.group(1))) is not None:
                return found
    return None


def _best_casing(name: str, units: list[EvidenceUnit]) -> str:
    """The spelling a document uses most for a name (`Candle` over a title's `candle`)."""
    pattern = re.compile(r"(?<![\w.\-])" + re.escape(name) + r"(?![\w\-])", re.I)
    spellings: dict[str, float] = {}
    for unit in units:
        if unit.kind == UnitKind.CODE:
            continue
        for m in pattern.finditer(unit.text):
            at_start = m.start() == 0 or unit.text[m.start() - 2 : m.start()].strip() in {".", "。"}
            spellings[m.group(0)] = spellings.get(m.group(0), 0.0) + (0.5 if at_start else 1.0)
    if not spellings:
        return name
    capitalized = {k: v for k, v in spellings.items() if not k.islower()}
    pool = capitalized if sum(capitalized.values()) >= 2 else spellings
    return max(pool.items(), key=lambda kv: (kv[1], kv[0]))[0]


def _in_news(unit: EvidenceUnit) -> bool:
    return bool(_NEWS.match(unit.text)) or any(
        _NEWS_SECTION.search(h) for h in unit.heading_path[-2:]
    )


def discover_names(
    units: list[EvidenceUnit],
    lexicon: Lexicon,
    plain_words: AbstractSet[str],
    known_names: AbstractSet[str] = frozenset(),
) -> list[Discovered]:
    """Names a document gives to things (see the module docstring), in document order.

    `plain_words` are words the corpus writes in lower case in running text: a Title Case lead
    made only of them ("Inference Optimization") is a feature label, not a name. `known_names`
    (normalised) are the corpus's document subjects: "Optimum Intel" extends "Optimum".
    """
    found: list[Discovered] = []

    def name_ok(name: str) -> bool:
        if lexicon.lookup(name) is not None:
            return True
        if not looks_like_entity(name) or all(w.lower() in README_WORDS for w in name.split()):
            return False
        words = name.split()
        if CJK.search(name):
            return False  # a Chinese phrase is a name only where the lexicon says so
        head = words[0]
        if len(words) >= 2 and (lexicon.lookup(head) or normalize_name(head) in known_names):
            # "OpenVINO Model Server", "Optimum Intel", "Unsloth Studio": a product's edition
            rest = words[1:]
            return all(w[:1].isupper() or w[:1].isdigit() for w in rest) and not all(
                w.lower() in README_WORDS for w in rest
            )
        return any(_name_shaped(w, plain_words) for w in words)

    for unit in units:
        if _in_news(unit):
            continue
        if unit.kind == UnitKind.CODE:
            for name in installed_packages(unit.text):
                if installed_thing(name, lexicon, plain_words, known_names):
                    # a package pip installs is a library unless its name says more; it is
                    # named as the page's text spells it (pip's names ignore case)
                    kind = type_from_name(name) or NodeType.LIBRARY
                    spelled = _spelled(normalize_name(name), units) or name
                    found.append(Discovered(spelled, unit, [], kind, "installed"))
            continue
        for pair in _ACRONYM_PAIR.finditer(unit.text):
            long = re.sub(r"^(?:The|A|An)\s+", "", pair.group("long"))
            short = pair.group("short")
            typed = type_from_name(long)
            shaped = typed is not None or name_ok(long)
            if _abbreviates(short, long) and shaped and looks_like_entity(long):
                found.append(Discovered(long, unit, [short], typed, "acronym"))
        if unit.lead and unit.kind == UnitKind.ITEM:
            lead = re.sub(r"\s*[（(][^）)]*[）)]\s*$", "", unit.lead).strip()
            lead = re.split(r"\s+for\s+", lead, maxsplit=1)[0]  # "X Execution Provider for Y"
            rest = unit.text[len(unit.lead) :].lstrip(" :：-–—")
            if name_ok(lead) or _described_lead(lead, rest, plain_words):
                described = (
                    type_from_description(rest) if _DESCRIBED.match(rest) else type_of_head(rest)
                )
                typed = type_from_name(lead) or described or type_of_list(unit.context)
                found.append(Discovered(lead, unit, [], typed, "lead"))
        defined = _DEFINITION.match(unit.text) if unit.kind == UnitKind.SENTENCE else None
        if defined is not None and _IS_A.match(defined.group("verb")):
            # "Kestrant is an extension for …": a name its definition types
            name = defined.group("name").strip()
            rest = unit.text[defined.end() :].strip()
            if _DESCRIBED.match(rest) and (name_ok(name) or _capitalized_name(name, plain_words)):
                typed = type_from_description(rest)
                if typed is not None:
                    found.append(Discovered(name, unit, [], typed, "defined"))
        if unit.kind == UnitKind.HEADING and len(unit.text.split()) <= 4:
            head = name_prefix(unit.text, lexicon, plain_words)
            head = head if head is None else _unmodified(head, lexicon)
            if head is not None and name_ok(head) and NAME_TOKEN.search(head):
                found.append(Discovered(head, unit, [], type_from_name(head), "heading"))
        for m in NAME_TOKEN.finditer(unit.text):
            token = _unmodified(m.group(0).rstrip(".-"), lexicon)
            if re.fullmatch(r"[A-Z]{2,}s", token):
                continue  # "GPUs", "LLMs": a plural, not a name
            if looks_like_entity(token) and token.lower() not in plain_words:
                found.append(Discovered(token, unit, [], type_from_name(token), "token"))
        for name, node_type in lexicon.family_names(unit.text):
            # "AVX2", "aarch64", "Blackwell": a name of a family the lexicon types (a word
            # the corpus writes in lower case, "neon", is none)
            if looks_like_entity(name) and (re.search(r"\d", name) or name not in plain_words):
                found.append(Discovered(name, unit, [], node_type, "family"))
        for name, node_type in listed_peers(unit.text, lexicon, plain_words):
            found.append(Discovered(name, unit, [], node_type, "peer"))
    _first_column_names(units, lexicon, name_ok, found, plain_words)
    # each table's header once, in document order (a set's order follows the hash seed)
    headers = dict.fromkeys(
        tuple(u.header) for u in units if u.kind == UnitKind.ROW and len(u.header) >= 3
    )
    for header in headers:
        named = [h for h in header[1:] if name_ok(h)]
        if len(named) >= 2 and len(named) >= (len(header) - 1) / 2:
            unit = next(u for u in units if tuple(u.header) == header)
            found.extend(Discovered(h, unit, [], type_from_name(h), "column") for h in named)
    return found


#: a stretch of text an enumeration lies in: no sentence, clause or bracket break inside
_ENUMERATION = re.compile(r"[^。；;:：!?！？()（）\[\]<>\n]+")
_ITEM_SEPARATOR = re.compile(rf"\s*(?:{LIST_JOIN})\s*", re.I)
_PEER = r"[A-Za-z][A-Za-z0-9.+\-]*[A-Za-z0-9+]"
_PEER_FIRST = re.compile(rf"(?<![A-Za-z0-9.\-])({_PEER})$")
_PEER_LAST = re.compile(rf"^({_PEER})(?![A-Za-z0-9+\-]|\.\w)")
_PEER_WHOLE = re.compile(rf"^({_PEER})$")
#: kinds whose things are listed side by side with their peers ("GPTQ, AWQ and …")
_PEER_KINDS = SOLUTION_TYPES - IDEA_TYPES


def listed_peers(
    text: str, lexicon: Lexicon, plain_words: AbstractSet[str]
) -> list[tuple[str, NodeType]]:
    """Names listed beside known names of one kind, typed as those: an enumeration of three
    items or more ("A、B、C", "A, B and C") of which two or more are the lexicon's things of
    one kind and most of its known items are of that kind. The first item may carry the words
    before the list and the last the words after it ("支持 A、B 和 Zorro 量化"); an ordinary
    word, a phrase or a name of another kind is no peer.

    >>> lexicon = Lexicon.default()
    >>> listed_peers("压缩可选AWQ、GPTQ、Zorro 或 QXQ方案", lexicon, set())
    [('Zorro', <NodeType.TECHNIQUE: 'Technique'>), ('QXQ', <NodeType.TECHNIQUE: 'Technique'>)]
    >>> listed_peers("Serve it with vLLM, TGI or Kestrel-X.", lexicon, set())
    [('Kestrel-X', <NodeType.INFERENCE_ENGINE: 'InferenceEngine'>)]
    >>> listed_peers("Serve it with vLLM, TGI, and Kestrel-X.", lexicon, set())  # serial comma
    [('Kestrel-X', <NodeType.INFERENCE_ENGINE: 'InferenceEngine'>)]
    >>> listed_peers("vLLM, TGI and friends", lexicon, {"friends"})
    []
    >>> listed_peers("AWQ, GPTQ or ZQX", lexicon, {"zqx"})  # capitals: a name, whatever flags say
    [('ZQX', <NodeType.TECHNIQUE: 'Technique'>)]
    >>> listed_peers("PyTorch, Linux and Zorro", lexicon, set())
    []
    """
    out: list[tuple[str, NodeType]] = []
    for stretch in _ENUMERATION.finditer(text):
        items = [i.strip() for i in _ITEM_SEPARATOR.split(stretch.group(0))]
        if len(items) < 3:
            continue
        kinds: Counter[NodeType] = Counter()
        unknown: list[str] = []
        for at, item in enumerate(items):
            entry = lexicon.lookup(item)
            if entry is None:
                mentions = lexicon.entity_mentions(item)
                if mentions and (
                    (at == 0 and mentions[-1].end == len(item))
                    or (at == len(items) - 1 and mentions[0].start == 0)
                ):
                    entry = lexicon.entries.get(mentions[-1 if at == 0 else 0].key)
            if entry is not None:
                kinds[entry.type] += 1
                continue
            shape = _PEER_FIRST if at == 0 else _PEER_LAST if at == len(items) - 1 else _PEER_WHOLE
            token = shape.search(item)
            if token is None:
                continue
            name = token.group(1)
            shaped = _name_shaped(name, plain_words) or (
                name[:1].isupper() and not common_word(name, plain_words)
            )
            if looks_like_entity(name) and shaped:
                unknown.append(name)
        if not kinds or not unknown:
            continue
        kind, count = kinds.most_common(1)[0]
        if kind in _PEER_KINDS and count >= 2 and 2 * count > kinds.total():
            out.extend((name, kind) for name in unknown)
    return out


def _abbreviates(short: str, long: str) -> bool:
    """Whether `short` abbreviates `long`: its letters are, in order, initials or capitals of it.

    >>> _abbreviates("OVMS", "OpenVINO Model Server")
    True
    >>> _abbreviates("NNCF", "Neural Network Compression Framework")
    True
    >>> _abbreviates("EOL", "Model Server")
    False
    """
    letters = [
        c
        for w in re.split(r"[\s\-]+", long)
        if w
        for c in (w[0] + "".join(x for x in w[1:] if x.isupper()))
    ]
    wanted = [c for c in short.upper() if c.isalpha()]
    if not wanted or not letters or wanted[0] != letters[0].upper():
        return False
    it = iter(c.upper() for c in letters)
    return all(any(c == w for c in it) for w in wanted)


_DESCRIBED = re.compile(rf"^{cues.alternatives('names.described')}\s", re.I)


def _first_column_names(
    units: list[EvidenceUnit],
    lexicon: Lexicon,
    name_ok: Callable[[str], bool],
    found: list[Discovered],
    plain_words: AbstractSet[str],
) -> None:
    """Names in a table's first column, when that column lists names: most of its cells are
    names, some by their shape, the others capitalized words (`_capitalized_name`: a cell's
    place in such a column says it is a name, whatever its shape)."""
    tables: dict[tuple[str, ...], list[EvidenceUnit]] = {}
    for unit in units:
        if unit.kind == UnitKind.ROW and unit.cells:
            tables.setdefault((*unit.heading_path, *unit.header), []).append(unit)
    for rows in tables.values():
        firsts = [r.cells[0] for r in rows if r.cells[0]]
        named = [c for c in firsts if name_ok(c) and (lexicon.lookup(c) or NAME_TOKEN.search(c))]
        # the column lists names where most of its cells are names, some of them by their shape
        names = [c for c in firsts if c in named or _capitalized_name(c, plain_words)]
        if len(firsts) >= 2 and named and len(names) >= 0.6 * len(firsts):
            label = rows[0].header[0] if rows[0].header else ""
            # the column's label says what its names are ("Model", "推理框架")
            kind = type_from_description(label) if len(label.split()) <= 3 else None
            for row in rows:
                cell = row.cells[0]
                if len(cell.split()) > 4:
                    continue
                if cell in names:
                    found.append(Discovered(cell, row, [], type_from_name(cell) or kind, "row"))


#: where a description's first clause ends: ", and …", ", which …", " that …", ". "
_FIRST_CLAUSE_END = re.compile(
    rf"[，。；;]|, {cues.alternatives('names.clause_join')}\b"
    rf"|\s{cues.alternatives('names.relative')}\s|\. "
)
#: "X (…) is …": what a definition says X is
_DEFINED_AS = re.compile(
    rf"\s*(?:[（(][^）)]*[）)])?\s*{cues.alternatives('document.copula')}\s*(.*)"
)
_ENGLISH_SUFFIX = re.compile(cues.alternatives("names.word_suffix") + "$")
_MODIFIER = re.compile(rf"(?<=[A-Za-z0-9])-{cues.alternatives('names.name_modifier')}$", re.I)


def _unmodified(name: str, lexicon: Lexicon) -> str:
    """The name an adjective is made of: `Heron-style` -> `Heron`, `vLLM-based` -> `vLLM`; a
    name the lexicon knows as written stays (`OpenAI-compatible`).

    >>> lexicon = Lexicon.default()
    >>> [_unmodified(n, lexicon) for n in ["LoRA-like", "Heron-based", "OpenAI-compatible"]]
    ['LoRA', 'Heron', 'OpenAI-compatible']
    """
    if lexicon.lookup(name) is not None:
        return name
    return _MODIFIER.sub("", name)


def common_word(word: str, plain_words: AbstractSet[str]) -> bool:
    """An ordinary English word: written in lower case in the corpus, a README word, or built
    with an English suffix ("Compatibility", "Familiar")."""
    lower = word.lower()
    return lower in README_WORDS or lower in plain_words or bool(_ENGLISH_SUFFIX.search(lower))


def _described_lead(lead: str, rest: str, plain_words: AbstractSet[str]) -> bool:
    """Whether a list item's lead is a name because the item describes it as a thing of a
    kind ("Kestrant - A nearest-neighbour search engine"), though its shape alone could be an
    ordinary word's (`common_word` guesses by English suffixes); not a word the corpus writes in
    lower case, nor a section word.

    >>> _described_lead("Kestrant", "A fast vector search engine.", set())
    True
    >>> _described_lead("Kestrant", "Works with any engine.", set())
    False
    >>> _described_lead("Security", "A local version runs in a container.", set())
    False
    >>> _described_lead("Tenant", "An isolated serving tool.", {"tenant"})
    False
    """
    return (
        _capitalized_name(lead, plain_words)
        and _DESCRIBED.match(rest) is not None
        and type_from_description(rest) is not None
    )


def _capitalized_name(text: str, plain_words: AbstractSet[str]) -> bool:
    """Whether a short phrase can be a name where its place says it is one (a list item's lead
    that the item describes, a cell of a column that lists names): capitalized words, none of
    them one the corpus writes in lower case or a section word. Its shape alone may look like
    an ordinary word's: its place decides.

    >>> _capitalized_name("Kestrant", set()), _capitalized_name("Kestrant Serve", set())
    (True, True)
    >>> _capitalized_name("Performance", set()), _capitalized_name("Tenant", {"tenant"})
    (False, False)
    """
    words = text.split()
    return (
        0 < len(words) <= 3
        and not CJK.search(text)
        and looks_like_entity(text)
        and all(w[:1].isupper() for w in words)
        and not any(w.lower() in README_WORDS or w.lower() in plain_words for w in words)
    )


def _name_shaped(word: str, plain_words: AbstractSet[str]) -> bool:
    """A word that can only be a name: shaped like one, or not an ordinary English word."""
    bare = word.strip("()").rstrip(".")
    if bare.lower() in README_WORDS or re.fullmatch(r"[A-Z]{2,}s", bare):
        return False
    if NAME_TOKEN.fullmatch(bare) or re.fullmatch(r"[A-Z]{2,}[0-9]*", bare):
        return True
    return bool(re.fullmatch(r"[A-Z][a-z]+", bare)) and not common_word(bare, plain_words)


def name_prefix(text: str, lexicon: Lexicon, plain_words: AbstractSet[str]) -> str | None:
    """The name a heading starts with: "FlashAttention-3 beta release" -> "FlashAttention-3".

    >>> name_prefix("FlashAttention-3 beta release", Lexicon.default(), set())
    'FlashAttention-3'
    """
    words = text.split()
    kept: list[str] = []
    for word in words:
        candidate = " ".join([*kept, word])
        if _name_shaped(word, plain_words) or lexicon.lookup(candidate) or lexicon.lookup(word):
            kept.append(word)
        else:
            break
    name = " ".join(kept)
    return name if kept and looks_like_entity(name) else None
