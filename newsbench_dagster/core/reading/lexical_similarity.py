"""The lexical similarity backend: always available, no model. Normalised, stopword-filtered,
lightly stemmed term-frequency cosine (en/de/fr) blended with a character n-gram cosine. It is
a fallback and says so (``is_fallback=True``)."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from newsbench_dagster.core.reading.text import is_blank

LEXICAL_NAME = "lexical-fallback"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Short function-word lists, already in normalised form (casefolded, accents stripped).
_STOPWORDS: dict[str, frozenset[str]] = {
    "en": _words(
        "a about above after again against all also am amid an and any are as at be because "
        "been before being below between both but by can could did do does doing down during "
        "each few for from further had has have having he her here hers herself him himself "
        "his how i if in into is it its itself just me more most my myself new no nor not now "
        "of off on once one only or other our ours out over own per said same say says she "
        "should so some such than that the their theirs them themselves then there these they "
        "this those through to too two under until up very via was we were what when where "
        "which while who whom why will with would you your yours"
    ),
    "de": _words(
        "aber alle allem allen aller alles als also am an ander andere anderen auch auf aus "
        "bei beim bereits bin bis bist da damit dann das dass dem den denn der des dessen die "
        "dies diese diesem diesen dieser dieses doch dort du durch ein eine einem einen einer "
        "eines er es etwa euch fur gegen gewesen hab habe haben hat hatte hatten hier hin "
        "hinter ich ihm ihn ihnen ihr ihre ihrem ihren ihrer im in indem ins ist jede jedem "
        "jeden jeder jedes jetzt kann kein keine konnen laut man mehr mein mich mir mit muss "
        "nach neue neuen neuer nicht nichts noch nun nur ob oder ohne sagt sagte sehr sein "
        "seine seinem seinen seiner seit sich sie sind so soll sollen sondern uber um und uns "
        "unser unter vom von vor wann war waren warum was weil wenn wer werden wie wieder "
        "will wir wird wo wurde wurden zu zum zur zwar zwischen"
    ),
    "fr": _words(
        "a ainsi alors apres au aussi aux avant avec c ca ce cela celle celui ces cet cette "
        "ceux chez comme contre d dans de deja depuis des doit donc dont du elle elles en "
        "encore entre est et etaient etait ete etre eu faire fait il ils j je l la le les "
        "leur leurs lors lui m ma mais me meme mes moi mon n ne nos notre nous nouveau "
        "nouveaux nouvelle nouvelles on ont ou par pas peut plus pour qu que qui s sa sans se "
        "selon sera seront ses son sont sous sur t ta te tes toi ton tous tout toute toutes "
        "tres tu un une vers vos votre vous y"
    ),
}
_ALL_STOPWORDS = frozenset().union(*_STOPWORDS.values())

# Light suffix stripping, longest suffix first; a suffix is stripped only when at least
# `_MIN_STEM` characters remain. It conflates plural and common inflected forms
# ("elections"/"election", "Wahlen"/"Wahl", "électorales"/"électoral"), nothing more. Words
# are accent-free and casefolded before this runs, so German umlauts are already plain vowels.
_SUFFIXES: dict[str, tuple[str, ...]] = {
    # English: plurals, -ing/-ed and a silent final e ("agreed"/"agree"/"agreeing" -> "agre");
    # "ies" -> "y" is handled in stem().
    "en": ("ing", "ed", "es", "s", "e"),
    # German: the noun/adjective endings of the Snowball stemmer's first step.
    "de": ("ern", "em", "en", "er", "es", "e", "s"),
    # French: plural and feminine markers and the commonest verb endings.
    "fr": ("aient", "ait", "ent", "ees", "ee", "es", "er", "ez", "e", "s", "x"),
}
_MIN_STEM = 4
_KEEP_S = ("ss", "us", "is")  # English words whose final "s" is not a plural (press, bus, crisis)

_NON_WORD = re.compile(r"[^\w]+|_+")
# Character n-grams of this length catch German compounds ("Bundestagswahl" ~ "Wahl zum
# Bundestag") and stems the suffix rules miss.
_NGRAM = 4
_CHAR_WEIGHT = 0.25  # the blend: (1 - w) * word cosine + w * char n-gram cosine


def normalize(text: str | None) -> str:
    """Casefold, strip accents (NFKD, drop combining marks), turn punctuation into spaces."""
    t = unicodedata.normalize("NFKD", (text or "").casefold())
    t = "".join(ch for ch in t if not unicodedata.combining(ch))
    return " ".join(_NON_WORD.sub(" ", t).split())


def detect_language(words: Sequence[str]) -> str:
    """The language among en/de/fr whose stopwords occur most often in ``words`` (normalised
    tokens); ``"en"`` on a tie or when none occur."""
    counts = {lang: sum(w in stop for w in words) for lang, stop in _STOPWORDS.items()}
    best = max(counts, key=lambda lang: (counts[lang], lang == "en"))
    return best if counts[best] else "en"


def stem(word: str, lang: str) -> str:
    """Strip one common inflectional suffix of ``lang`` (see ``_SUFFIXES``); numbers untouched."""
    if word.isdigit() or len(word) <= _MIN_STEM:
        return word
    if lang == "en":
        if word.endswith("ies") and len(word) - 3 >= _MIN_STEM - 1:
            return word[:-3] + "y"
        if word.endswith(_KEEP_S):
            return word
    if lang == "fr" and word.endswith("aux") and len(word) - 3 >= _MIN_STEM - 1:
        return word[:-3] + "al"
    for suffix in _SUFFIXES.get(lang, ()):
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word


def terms(text: str | None, lang: str | None = None) -> list[str]:
    """Content terms of ``text``: normalised tokens without stopwords (of ``lang``, detected when
    None) or one-letter tokens, stemmed."""
    words = normalize(text).split()
    lang = lang or detect_language(words)
    stop = _STOPWORDS.get(lang, _ALL_STOPWORDS)
    return [stem(w, lang) for w in words if w not in stop and (len(w) > 1 or w.isdigit())]


def _char_ngrams(words: Sequence[str], n: int = _NGRAM) -> Counter[str]:
    grams: Counter[str] = Counter()
    for w in words:
        padded = f" {w} "
        if len(padded) <= n:
            grams[padded] += 1
        else:
            grams.update(padded[i : i + n] for i in range(len(padded) - n + 1))
    return grams


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    if len(a) > len(b):
        a, b = b, a
    dot = sum(v * b[k] for k, v in a.items() if k in b)
    if not dot:
        return 0.0
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return max(0.0, min(1.0, dot / (na * nb)))


class LexicalSimilarity:
    """Term-frequency cosine over normalised, stopword-filtered, lightly stemmed words, blended
    with a character 4-gram cosine over the same words (weight ``char_weight``).

    The language (en/de/fr) is fixed by ``lang`` or detected once per comparison from both
    sides together, so the two texts are always stemmed alike.
    """

    name = LEXICAL_NAME
    is_fallback = True

    def __init__(self, lang: str | None = None, char_weight: float = _CHAR_WEIGHT):
        self.lang = lang
        self.char_weight = char_weight

    def _lang(self, *texts: str) -> str:
        if self.lang:
            return self.lang
        return detect_language(normalize(" ".join(texts)).split())

    def _score(self, qa: list[str], qb: list[str]) -> float:
        word = _cosine(Counter(qa), Counter(qb))
        if not self.char_weight:
            return word
        char = _cosine(_char_ngrams(qa), _char_ngrams(qb))
        return (1.0 - self.char_weight) * word + self.char_weight * char

    def similarity(self, a: str, b: str) -> float:
        if is_blank(a) or is_blank(b):
            return 0.0
        lang = self._lang(a, b)
        return self._score(terms(a, lang), terms(b, lang))

    def similarities(self, query: str, refs: Sequence[str]) -> list[float]:
        if is_blank(query):
            return [0.0 for _ in refs]
        lang = self._lang(query, *refs)
        q = terms(query, lang)
        return [0.0 if is_blank(r) else self._score(q, terms(r, lang)) for r in refs]

    def __repr__(self) -> str:
        return f"LexicalSimilarity(lang={self.lang!r}, char_weight={self.char_weight})"
