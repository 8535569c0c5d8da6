"""The fact box ("Key facts"): a seeded share of stories carry one, drawn from the story itself;
each template family and version marks it up differently; the ground truth and page
understanding agree on its entries on every site, before and after every redesign."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlsplit

import pytest
from lxml import html

from newsbench_dagster.core.reading.page import understand
from newsbench_dagster.newsroom.catalog import SiteSpec
from newsbench_dagster.newsroom.routes import respond
from newsbench_dagster.newsroom.site_world import SiteWorld
from newsbench_dagster.newsroom.stories import Story
from newsbench_dagster.newsroom.text import capitalise
from newsbench_dagster.newsroom.world import Newsroom

AT = datetime(2026, 11, 30, 15, tzinfo=UTC)
LABELS = {
    "en": ("Key facts", "At a glance", ["Place", "Figure", "Who", "Date"]),
    "de": ("Auf einen Blick", "Fakten", ["Ort", "Zahl", "Wer", "Datum"]),
    "fr": ("L'essentiel", "En bref", ["Lieu", "Chiffre", "Qui", "Date"]),
}
# What marks the fact box, per family and template version (XPath on the article page).
MARKUP = {
    ("classic", 1): "//article//div[@class='story-body']/aside[@class='factbox'][h2][dl/dt]",
    ("classic", 2): "//article/aside[@class='c-factbox'][h3][dl/div/dt]",
    ("grid", 1): "//article/section[@class='faktenbox'][table[caption][.//th]]",
    ("grid", 2): "//article//div[@class='artikel__text']/section[@class='infobox'][h3][table]",
    ("magazine", 1): "//article//section/div[@class='key-points'][h2][ul/li/strong]",
    ("magazine", 2): "//article/aside[@class='essentiel'][h3][ul/li/b]",
    ("magazine", 3): "//article//section/figure[@class='cles'][figcaption][ul/li]",
}
ANY_FACTBOX = (
    "//*[contains(@class, 'factbox') or contains(@class, 'faktenbox') or "
    "contains(@class, 'infobox') or contains(@class, 'key-points') or "
    "contains(@class, 'essentiel') or @class='cles']"
)


@pytest.fixture(scope="module")
def world() -> Newsroom:
    return Newsroom(seed=7)


def local_noon(spec: SiteSpec, day: date) -> datetime:
    return datetime.combine(day, time(12), tzinfo=spec.tz).astimezone(UTC)


def instants(spec: SiteSpec) -> list[datetime]:
    """A day before and a day after each redesign (so every template version is seen)."""
    out = []
    for drift in spec.drifts:
        out += [
            local_noon(spec, drift.on - timedelta(days=1)),
            local_noon(spec, drift.on + timedelta(days=1)),
        ]
    return out


def page(site: SiteWorld, story: Story, at: datetime) -> bytes:
    response = respond(site, story.path, at)
    assert response.status == 200
    return response.body


def test_a_seeded_share_of_stories_has_a_factbox(world: Newsroom) -> None:
    total = with_box = 0
    for spec in world.sites:
        site = world.site(spec.key)
        assert spec.factbox_share == 0.35  # the catalog's default
        stories = [site.story(k) for k in range(2000)]
        boxes = [s.factbox for s in stories if s.factbox is not None]
        assert abs(len(boxes) / len(stories) - 0.35) < 0.03, spec.key
        total, with_box = total + len(stories), with_box + len(boxes)
        # 3 or 4 entries, both common; labels in the site's language, in a fixed order.
        sizes = {len(b) for b in boxes}
        assert sizes == {3, 4}, spec.key
        assert 0.4 < sum(len(b) == 4 for b in boxes) / len(boxes) < 0.6
        labels = LABELS[spec.language][2]
        assert all([label for label, _ in b] == labels[: len(b)] for b in boxes), spec.key
    assert abs(with_box / total - 0.35) < 0.01
    # The same seed gives the same boxes; another seed other ones.
    again, other = Newsroom(seed=7).site("harbor"), Newsroom(seed=8).site("harbor")
    mine = [world.site("harbor").story(k).factbox for k in range(200)]
    assert mine == [again.story(k).factbox for k in range(200)]
    assert mine != [other.story(k).factbox for k in range(200)]


def test_factbox_entries_come_from_the_story(world: Newsroom) -> None:
    months = {"en": "November", "de": "November", "fr": "novembre"}
    for spec in world.sites:
        site = world.site(spec.key)
        for story in site.stories(AT, 60):
            if story.factbox is None:
                continue
            facts = dict(story.factbox)
            place, figure, who, day_label = LABELS[spec.language][2]
            day = [day_label] if day_label in facts else []
            # Who: the story's subject, who also opens the headline.
            assert story.headline.startswith(facts[who]), story.url
            assert facts[place] in f"{story.summary} {' '.join(story.body)}", story.url
            assert facts[figure].isdigit() and 12 <= int(facts[figure]) < 481
            if day:
                local = story.published.astimezone(spec.tz)
                assert str(local.year) in facts[day[0]] and str(local.day) in facts[day[0]]
                if local.month == 11:
                    assert months[spec.language] in facts[day[0]]


def test_factbox_share_comes_from_the_catalog(world: Newsroom, tmp_path) -> None:
    catalog = world.catalog_path.read_text(encoding="utf-8")
    custom = tmp_path / "catalog.yaml"
    custom.write_text(
        catalog.replace("  factbox_share: 0.35\n", "  factbox_share: 0.0\n").replace(
            "vocab: vocab.yaml", f"vocab: {world.vocab_path}"
        ),
        encoding="utf-8",
    )
    none = Newsroom(seed=7, catalog_path=custom)
    assert all(none.site("rhein").story(k).factbox is None for k in range(300))
    with pytest.raises(ValueError, match="shares"):
        SiteSpec.from_dict({**_raw(world, "harbor"), "factbox_share": 1.5})


def _raw(world: Newsroom, key: str) -> dict:
    spec = world.site(key).spec
    return {
        "key": spec.key,
        "host": spec.host,
        "name": spec.name,
        "language": spec.language,
        "timezone": spec.timezone,
        "template": spec.template,
        "feed_kind": spec.feed_kind,
        "feed_path": spec.feed_path,
        "story_interval_minutes": spec.story_interval_minutes,
        "lead_rotation_minutes": spec.lead_rotation_minutes,
        "sections": list(spec.sections),
    }


def test_truth_carries_the_factbox(world: Newsroom) -> None:
    for spec in world.sites:
        site = world.site(spec.key)
        truth = world.truth(spec.key, AT)
        by_url = {s.url: s for s in site.stories(AT, 20)}
        for article in truth.articles:
            story = by_url[article.url]
            expected = [list(f) for f in story.factbox] if story.factbox else None
            assert article.factbox == expected, article.url
        plain = truth.as_dict()
        assert all("factbox" in a for a in plain["articles"])
        assert any(a["factbox"] for a in plain["articles"])
        assert any(a["factbox"] is None for a in plain["articles"])


def test_every_site_and_template_version_parses_to_the_truth(world: Newsroom) -> None:
    seen: set[tuple[str, int]] = set()
    for spec in world.sites:
        site = world.site(spec.key)
        title, alt_title, _ = LABELS[spec.language]
        for at in instants(spec):
            version = site.version(at)
            truth = world.truth(spec.key, at)
            stories = {s.url: s for s in site.stories(at, 20)}
            with_box = [a for a in truth.articles if a.factbox]
            without = [a for a in truth.articles if not a.factbox]
            assert with_box and without, (spec.key, at)
            for article in truth.articles:
                body = respond(site, urlsplit(article.url).path, at).body
                r = understand(body, article.url)
                where = f"{spec.key} v{version} {article.url}"
                assert r.kind == "article", where
                assert r.errors == () or article.quirk == "malformed_jsonld", where
                assert r.headline == article.headline, where
                doc = html.fromstring(body)
                if article.factbox is None:
                    assert r.factbox == () and r.factbox_title is None, where
                    assert not doc.xpath(ANY_FACTBOX), where
                    continue
                assert [[f.label, f.value] for f in r.factbox] == article.factbox, where
                expected_title = alt_title if (spec.template, version) == ("magazine", 3) else title
                assert r.factbox_title == expected_title, where
                # The family's markup for this version, once, inside the article, after the
                # headline and the lead paragraph; never a level-1 heading.
                assert len(doc.xpath(MARKUP[spec.template, version])) == 1, where
                seen.add((spec.template, version))
                box = doc.xpath(ANY_FACTBOX)[0]
                assert box.xpath("ancestor::article and ancestor::main"), where
                assert not box.xpath(".//h1"), where
                text = doc.xpath("//main")[0].text_content()
                at_box = text.index(box.text_content().strip())
                assert text.index(article.headline) < at_box, where
                assert text.index(stories[article.url].summary) < at_box, where
                # The page's own h1 is still the headline (grid v2 has none, as before).
                h1s = [h.text_content() for h in doc.xpath("//main//h1")]
                assert h1s == ([] if (spec.template, version) == ("grid", 2) else [r.headline])
                assert r.listing == (), where
    assert seen == set(MARKUP)


def test_paywalled_and_amp_pages_show_the_factbox(world: Newsroom) -> None:
    for spec in world.sites:
        site = world.site(spec.key)
        stories = [s for s in site.stories(AT, 120) if s.factbox]
        paywalled = [s for s in stories if s.paywalled]
        for story in [*paywalled[:1], stories[0]]:
            r = understand(page(site, story, AT), story.url)
            assert [(f.label, f.value) for f in r.factbox] == list(story.factbox), story.url
        amp = respond(site, "/amp" + stories[0].path, AT)
        r = understand(amp.body, site.url("/amp" + stories[0].path))
        assert [(f.label, f.value) for f in r.factbox] == list(stories[0].factbox)
        assert r.factbox_title == LABELS[spec.language][0] and r.kind == "article"


def test_pages_without_a_factbox_show_no_trace_of_one(world: Newsroom) -> None:
    for spec in world.sites:
        site = world.site(spec.key)
        story = next(s for s in site.stories(AT, 40) if s.factbox is None)
        body = page(site, story, AT).decode()
        for marker in ("factbox", "faktenbox", "infobox", "key-points", "essentiel", "cles"):
            assert f'class="{marker}' not in body and f'"c-{marker}' not in body


def test_factbox_is_capitalised_who(world: Newsroom) -> None:
    site = world.site("lac")
    story = next(s for s in site.stories(AT, 60) if s.factbox)
    who = dict(story.factbox)["Qui"]
    assert who == capitalise(who) and who[0].isupper()
