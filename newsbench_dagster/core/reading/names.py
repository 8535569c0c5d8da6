"""What a person's name looks like in a byline, in many languages: the byline's own words taken
off ("By", "von", "par", "przez", "автор", "作者：", "記者", "Posted by", "Author:"), roles and
page furniture cut ("Senior Editor", "Twitter", "+Follow", "Updated", a month), and what is
not a person set aside (news agencies, organisations, places, site names, sentences).

`byline_names("By Jane Doe and John Roe, Reuters")` -> ["Jane Doe", "John Roe"].
"""

from __future__ import annotations

import re
import unicodedata

# Words that introduce a byline, any language; CJK ones need a separator or a space after them
# (a Chinese name may itself start with 文).
_LEAD_WORDS = (
    r"(?:(?:written|posted|reported|published|text|words|story|reporting|compiled|updated|"
    r"edited|produced|photos?|interview)\s+)?"
    r"(?:by|von|vom|par|di|door|por|av|af|przez|від|от|de)"
)
_LEAD = re.compile(
    rf"^\s*(?:{_LEAD_WORDS}\b\s*:?\s*"
    r"|(?:author|authors|autor|autorin|autoren|auteur|autore|autores|auteurs|reporter|"
    r"redacción|redaktion|text|texte|testo|tekst|escrito por|автор|авторы|кореспондент|"
    r"корреспондент)\s*[:：]\s*"
    r"|(?:作者|记者|記者|文|撰文|编辑|責任編集|投稿者|著者|筆者|執筆|文责|来源|編集部|기자)\s*[:：/／|]?\s*"
    r")",
    re.IGNORECASE,
)
# A line that starts like a byline ("By ...", "Von ...", "作者：").
LEAD_WORD = _LEAD


# Joins between several people.
# The lower-case ones only as words of their own in lower case ("Dan", "Un" start names):
# y e i (es, it, pt, pl, hr, ca), a (cs, sk), і та (uk), és (hu), και (el), và (vi), dan
# (id, ms), ir (lt), un (lv), و (ar). Not "in" (sl): "Jane Doe in Kansas City" is a dateline.
_JOIN = re.compile(
    r"\s*(?:,|;|&|/|\+|、|，|\band\b|\bund\b|\bet\b|\ben\b|\boch\b|\bog\b|\bja\b|\bși\b|"
    r"\bи\b|\bve\b|\boraz\b|(?-i:\s(?:[yeia]|і|та|és|και|và|dan|ir|un|و)\s))\s*",
    re.IGNORECASE,
)
# Where the name ends and the page furniture begins: a role, a call to action, a date word.
_STOP_WORDS = {
    # roles
    "editor", "editors", "writer", "writers", "reporter", "reporters", "correspondent",
    "correspondents", "contributor", "contributing", "columnist", "fellow", "ceo", "cto", "cfo",
    "founder", "co-founder", "senior", "executive", "managing", "chief", "deputy", "associate",
    "assistant", "staff", "photographer", "producer", "analyst", "director", "host", "anchor",
    "journalist", "journaliste", "redakteur", "redakteurin", "korrespondent", "korrespondentin",
    "redacteur", "rédacteur", "rédactrice", "envoyé", "envoyée", "special", "spécial",
    "politics", "political", "technology", "science", "sports", "business", "news", "intern",
    "student", "professor", "president", "technologist", "officer", "manager", "head",
    "opinion", "commentator", "critic",
    # furniture
    "twitter", "facebook", "instagram", "linkedin", "email", "e-mail", "mail", "follow",
    "+follow", "following", "contact", "view", "see", "more", "read", "bio", "profile",
    "link", "copied", "share", "get", "rss", "updated", "update", "published", "posted",
    "lesedauer", "aktualisiert", "veröffentlicht", "mis", "publié", "před", "hace", "il",
    "min", "minutes", "hours", "ago", "on", "at", "about", "is", "was", "has", "have", "who",
    "in", "aus", "à", "en", "from", "for", "with", "the", "via", "dans", "am", "um",
}  # fmt: skip
# Month names end a name ("Laura Adkins December 29") but may start one ("May", "Jan").
_MONTHS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "januar", "februar", "märz", "mai", "juni", "juli", "oktober",
    "dezember", "janvier", "février", "mars", "avril", "juin", "juillet", "août", "septembre",
    "octobre", "novembre", "décembre",
}  # fmt: skip
_CAMEL = re.compile(r"[a-z][A-Z]")
_CAMEL_NAME = re.compile(r"^(?:Mc|Mac|De|Di|Da|La|Le|Van|Von|O'|D')")
# Lower-case words a name may hold ("Lisa de Moraes", "Ludwig van Beethoven").
_PARTICLES = {
    "de", "da", "das", "do", "dos", "di", "del", "della", "der", "den", "van", "von", "ter",
    "ten", "du", "des", "le", "la", "bin", "ibn", "al", "el", "y", "e", "zu", "af", "st.",
}  # fmt: skip
# News agencies and newsroom collectives: credited, but not a person.
AGENCIES = {
    "ap", "afp", "reuters", "dpa", "apa", "ansa", "efe", "xinhua", "kyodo", "jiji", "yonhap",
    "čtk", "ctk", "pti", "ians", "ani", "tnn", "upi", "bloomberg", "associated press",
    "agence france-presse", "agence france presse", "the associated press", "epd", "kna",
    "sid", "belga", "anp", "tass", "ria novosti", "interfax", "ukrinform", "pap", "mti",
    "staff", "newsroom", "redaktion", "rédaction", "redazione", "redacción", "editorial board",
    "editorial", "admin", "administrator", "guest", "anonymous", "collectif", "staff writer",
    "cnn", "bbc", "wire", "wires", "agencies", "agency", "zdroj", "source", "quelle",
}  # fmt: skip
# Words that make a credit an organisation ("Western Journal", "The Penny Hoarder Staff").
_ORG_WORDS = {
    "news", "post", "times", "press", "media", "staff", "team", "desk", "committee",
    "magazine", "journal", "herald", "tribune", "daily", "online", "group", "inc", "inc.",
    "ltd", "llc", "gmbh", "corp", "company", "network", "radio", "tv", "television",
    "channel", "agency", "service", "services", "university", "institute", "association",
    "foundation", "council", "department", "ministry", "office", "blog", "review", "report",
    "gazette", "observer", "guardian", "telegraph", "chronicle", "insider", "wire", "digital",
    "studio", "studios", "club", "league", "party", "center", "centre", "editors", "redaktion",
}  # fmt: skip
# Places a byline or dateline names after the people ("Jane Doe, Washington"): the world's
# most-datelined cities and countries; a single capitalised word after a name is cut anyway.
PLACES = {
    "washington", "new york", "london", "paris", "berlin", "brussels", "bruxelles", "brüssel",
    "moscow", "moskau", "beijing", "peking", "tokyo", "hong kong", "shanghai", "delhi",
    "new delhi", "mumbai", "sydney", "toronto", "ottawa", "los angeles", "san francisco",
    "chicago", "boston", "rome", "roma", "rom", "madrid", "barcelona", "lisbon", "lisboa",
    "vienna", "wien", "geneva", "genève", "genf", "zurich", "zürich", "bern", "amsterdam",
    "the hague", "den haag", "frankfurt", "munich", "münchen", "hamburg", "cologne", "köln",
    "stockholm", "oslo", "copenhagen", "helsinki", "warsaw", "warschau", "prague", "prag",
    "budapest", "athens", "istanbul", "ankara", "jerusalem", "tel aviv", "cairo", "dubai",
    "tehran", "kyiv", "kiev", "kabul", "seoul", "singapore", "bangkok", "jakarta", "manila",
    "mexico city", "são paulo", "rio de janeiro", "buenos aires", "johannesburg", "nairobi",
    "lagos", "usa", "us", "u.s.", "uk", "u.k.", "china", "japan", "india", "germany",
    "france", "italy", "spain", "russia", "ukraine", "israel", "canada", "australia",
    "europe", "africa", "asia", "america",
}  # fmt: skip
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# What follows a reporter's name after a slash in Chinese and Japanese credits: the dateline
# ("記者陳嘉寧／桃園機場報導", "台北19日電") or a photo credit ("／攝影", "翻攝", "撮影").
_CJK_DATELINE = re.compile(r"(?:報導|报道|報道|攝影|摄影|撮影|翻攝|翻摄|傳真|传真|日電|日电)$")
_INITIALS = re.compile(r"^(?:[^\W\d_]\.){1,3}$")  # "T.", "T.C.", "J.R.R."
_PAREN = re.compile(r"\s*[(\[（【].*?(?:[)\]）】]|$)")
# Where a byline's first part ends: "Jane Doe | Site", "Jane Doe · CBC News", "Jane — Paris".
_CUT = re.compile(r"\s+[|·•—–]\s*|\s+-\s+|\s*[|·•]\s*|https?://|www\.|@\S")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip(" .,:;")


def is_agency(text: str) -> bool:
    return _fold(text) in AGENCIES


def is_place(text: str) -> bool:
    return _fold(text) in PLACES


def looks_organisation(text: str) -> bool:
    words = _fold(text).split()
    return is_agency(text) or bool(words) and (words[-1] in _ORG_WORDS or words[0] == "the")


def _cased_script(text: str) -> bool:
    """Whether the text is in a script with capitals (Latin, Greek, Cyrillic, Armenian)."""
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(c.isupper() or c.islower() for c in letters) > len(letters) / 2


def person_name(text: str, lone_word_ok: bool = False) -> str | None:
    """The person's name at the start of `text`, or None when it does not name a person.
    `lone_word_ok` admits a single word ("EvilSpark"): for structured data, which says the
    value is an author, not for a byline found in the page."""
    text = _PAREN.sub(" ", unicodedata.normalize("NFKC", text))
    text = _CUT.split(text, maxsplit=1)[0]
    text = re.sub(r"\s+", " ", _LEAD.sub("", text.strip(" \t\n:;,.-–—"))).strip(" :;,.-–—")
    text = re.split(r"\d", text, maxsplit=1)[0].strip(" :;,.-–—")  # "Jane Doe 5 hours ago"
    if not text or len(text) > 80:
        return None
    if _CJK.search(text):
        # CJK names are written without spaces (a Japanese one may have one): 2-10 characters.
        compact = text.split()
        name = " ".join(compact[:2]) if len(compact) <= 2 else compact[0]
        if _CJK_DATELINE.search(name):
            return None
        return name if 2 <= len(name.replace(" ", "")) <= 10 and not is_agency(name) else None
    if not _cased_script(text):
        words = text.split()
        return text if 1 <= len(words) <= 5 else None
    kept: list[str] = []
    for word in text.split():
        low = word.casefold().strip(".,:;")
        if (low in _STOP_WORDS or low in _MONTHS) and kept:
            break
        if low in _STOP_WORDS:
            return None
        if low in _PARTICLES and kept:
            kept.append(word)
            continue
        upper_start = word[:1].isupper() or _INITIALS.match(word)
        if not upper_start:
            if kept:
                break
            return None
        # "Meg Wagner NEW YORK DAILY NEWS": a switch to capitals after a cased name ends it.
        if kept and word.isupper() and len(word) > 2 and not any(k.isupper() for k in kept):
            break
        kept.append(word)
    # "Ikran Dahir BuzzFeed UK": a site's name or a place trailing the name goes.
    while len(kept) > 2 and (
        is_place(kept[-1])
        or is_agency(kept[-1])
        or (_CAMEL.search(kept[-1]) and not _CAMEL_NAME.match(kept[-1]))
    ):
        kept.pop()
    while kept and kept[-1].casefold() in _PARTICLES:
        kept.pop()
    # "Confreaks Confreaks", "Ellyn Shook Ellyn Shook": a name printed twice is one name.
    half = len(kept) // 2
    if half and len(kept) % 2 == 0 and kept[:half] == kept[half:]:
        kept = kept[:half]
    if not kept or len(kept) > 5 or (len(kept) == 1 and not lone_word_ok):
        return None
    name = " ".join(kept)
    if looks_organisation(name) or is_place(name):
        return None
    return name


def byline_names(text: str, lone_word_ok: bool = False) -> list[str]:
    """Every person a byline names, in order, each once."""
    text = _PAREN.sub(" ", unicodedata.normalize("NFKC", text or ""))
    text = _CUT.split(text.strip(), maxsplit=1)[0]
    text = _LEAD.sub("", text.strip())
    out: list[str] = []
    for part in _JOIN.split(text):
        name = person_name(part, lone_word_ok)
        if name and name.casefold() not in {o.casefold() for o in out}:
            out.append(name)
    return out


def same_people(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Two author lists name the same people (case, accents' form and punctuation aside)."""

    def key(names: tuple[str, ...]) -> set[str]:
        return {re.sub(r"[\W_]+", "", _fold(n)) for n in names}

    return bool(a) and bool(b) and key(a) == key(b)
