"""Seeded variation of the form pages: deterministic markup, stable task and truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
from lxml import html

from newsbench_dagster.newsroom.clock import FixedClock
from newsbench_dagster.newsroom.form_fields import FORM_FIELDS
from newsbench_dagster.newsroom.form_variant import (
    DECOYS,
    LABEL_MODES,
    MAX_DEPTH,
    MAX_HYDRATION_MS,
    Variant,
)
from newsbench_dagster.newsroom.server import NewsroomServer
from newsbench_dagster.newsroom.variation import PAGES, generate
from newsbench_dagster.newsroom.world import Newsroom

AT = datetime(2026, 3, 10, 14, 7, tzinfo=UTC)
HARBOR = "http://harbor-herald.test"
SEEDS = range(10)


@pytest.fixture(scope="module")
def newsroom() -> Newsroom:
    return Newsroom(seed=7)


@pytest.fixture(scope="module")
def server(newsroom: Newsroom) -> Iterator[NewsroomServer]:
    with NewsroomServer(newsroom, clock=FixedClock(AT)) as srv:
        yield srv


def test_variant_choices_are_deterministic_and_in_range() -> None:
    variants = [Variant.from_seed(seed) for seed in range(300)]
    assert variants == [Variant.from_seed(seed) for seed in range(300)]
    for v in variants:
        assert v.labels in LABEL_MODES
        assert 0 <= v.depth <= MAX_DEPTH
        assert 0 <= v.hydration_ms <= MAX_HYDRATION_MS
        assert len(v.decoys) <= 2 and set(v.decoys) <= set(DECOYS)
        assert len(set(v.decoys)) == len(v.decoys)
    # Every option actually occurs, so every obstacle is exercised by some seed.
    assert set(Counter(v.labels for v in variants)) == set(LABEL_MODES)
    assert set(Counter(v.depth for v in variants)) == set(range(MAX_DEPTH + 1))
    assert set(Counter(len(v.decoys) for v in variants)) == {0, 1, 2}
    assert len({v.id_prefix for v in variants}) > 1 and len({v.id_suffix for v in variants}) > 1
    orders = {tuple(v.arrange("signup", FORM_FIELDS["signup"])) for v in variants}
    assert len(orders) == 6  # all permutations of three fields


def test_same_seed_same_bytes_other_seed_other_bytes(newsroom: Newsroom) -> None:
    for page in PAGES:
        pages = [generate("harbor", page, seed, newsroom) for seed in SEEDS]
        assert pages == [generate("harbor", page, seed, newsroom) for seed in SEEDS]
        assert len(set(pages)) == len(pages), page
        assert generate("harbor", page, None, newsroom) not in pages


def test_same_bytes_in_another_process(newsroom: Newsroom) -> None:
    """The CLI in a fresh interpreter with another hash seed prints the very same page."""
    cmd = [sys.executable, "-m", "newsbench_dagster.newsroom.variation"]
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [*cmd, "--seed", "4", "--site", "rhein", "--page", "newsletter"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert out.stdout == generate("rhein", "newsletter", 4, newsroom)
    assert out.stderr == ""
    described = subprocess.run(
        [*cmd, "--seed", "4", "--site", "rhein", "--page", "newsletter", "--describe"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    doc = json.loads(described.stdout)
    assert doc["variant"] == Variant.from_seed(4).describe()
    assert doc["field_order"]["signup"] == Variant.from_seed(4).arrange(
        "signup", ["email", "lists", "terms"]
    )


@pytest.mark.parametrize("seed", [None, *SEEDS])
def test_names_stay_ids_vary_every_control_is_named(newsroom: Newsroom, seed: int | None) -> None:
    variant = Variant.canonical() if seed is None else Variant.from_seed(seed)
    page = html.fromstring(generate("lac", "newsletter", seed, newsroom))
    (signup,) = page.xpath("//form[@action='/newsletter']")
    names = [el.get("name") for el in signup.xpath(".//input")]
    assert sorted(set(names)) == ["email", "lists", "terms"]
    # Our ids are unique, also against whatever ids the site's chrome uses.
    every_id = Counter(page.xpath("//@id"))
    assert all(every_id[i] == 1 for i in page.xpath("//main//@id"))
    assert signup.get("id") == variant.id("signup", "form")
    # Each control has an accessible name, tied the variant's way.
    for el in signup.xpath(".//input"):
        by_for = page.xpath(f"//label[@for='{el.get('id')}']")
        by_wrap = el.xpath("ancestor::label")
        by_aria = el.get("aria-label")
        tied = {"for": bool(by_for), "wrap": bool(by_wrap), "aria": bool(by_aria)}
        assert [mode for mode, yes in tied.items() if yes] == [variant.labels]
    # Nesting depth: extra wrappers around each field.
    (email_field,) = signup.xpath(".//div[contains(@class, 'field-email')]")
    assert len(email_field.xpath("ancestor::div[contains(@class, 'fw')]")) == variant.depth
    # Hydration: the real submit button waits for a script, the premium one is disabled for good.
    (submit,) = signup.xpath(".//button[@type='submit']")
    assert (submit.get("disabled") is not None) == bool(variant.hydration_ms)
    scripts = " ".join(page.xpath("//main//script/text()"))
    assert (f"}}, {variant.hydration_ms});" in scripts) == bool(variant.hydration_ms)
    (premium,) = page.xpath("//form[@action='/newsletter/premium']//button[@type='submit']")
    assert premium.get("disabled") is not None and premium.get("data-nr-hydrate") is None
    # Decoys never submit anything.
    extra = signup.xpath(".//div[@class='actions']/*[not(@type='submit')]")
    assert len(extra) == len(variant.decoys)
    assert all(el.tag == "a" or el.get("type") == "button" for el in extra)
    # Field order: the variant's permutation of the canonical order.
    fields = signup.xpath(".//div[contains(concat(' ', @class, ' '), ' field ')]")
    order = [el.get("class").split()[1].removeprefix("field-") for el in fields]
    assert order == variant.arrange("signup", FORM_FIELDS["signup"])


def _post_from_page(client: httpx.Client, path: str, data: dict, seed: int) -> httpx.Response:
    """Fetch the variant's page and post these fields, by name, to its form for `path`."""
    headers = {"X-Newsroom-Variant": str(seed)}
    page = html.fromstring(client.get(f"{HARBOR}{path}", headers=headers).content)
    (form,) = page.xpath(f"//form[@method='post' and @action='{path}']")
    assert set(data) <= set(form.xpath(".//*[@name]/@name"))
    return client.post(f"{HARBOR}{path}", data=data, headers=headers)


def test_any_variant_posts_make_the_same_mutation(server: NewsroomServer) -> None:
    signup = {"email": "reader@example.com", "lists": ["breaking", "weekend"], "terms": "yes"}
    report = {
        "url": f"{HARBOR}/news/city/x-1",
        "text": "The date in the second paragraph is wrong.",
    }
    mutations: dict[str, set[str]] = {"newsletter_signup": set(), "correction_report": set()}
    for seed in SEEDS:
        run = f"variation-{seed}"
        with httpx.Client(proxy=server.address, headers={"X-Newsroom-Run": run}) as c:
            assert _post_from_page(c, "/newsletter", signup, seed).status_code == 303
            assert _post_from_page(c, "/corrections/report", report, seed).status_code == 303
        for kind in mutations:
            (event,) = server.state.events(f"run:{run}", kind)
            data = dict(event.data)
            assert data.pop("variant") == seed
            mutations[kind].add(json.dumps(data, sort_keys=True))
        assert server.state.run(f"run:{run}").variant == seed
    assert {kind: len(seen) for kind, seen in mutations.items()} == {
        "newsletter_signup": 1,
        "correction_report": 1,
    }


def test_generate_all_pages_in_every_language(newsroom: Newsroom) -> None:
    for key in ("harbor", "rhein", "lac"):
        lang = newsroom.site(key).spec.language
        for page in PAGES:
            doc = html.fromstring(generate(key, page, 2, newsroom))
            assert doc.get("lang") == lang
            assert doc.xpath("//main//form[@method='post']"), (key, page)
    with pytest.raises(ValueError):
        generate("harbor", "checkout", 1, newsroom)
