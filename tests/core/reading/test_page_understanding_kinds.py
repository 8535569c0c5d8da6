"""Page understanding beyond one article: what kind of page it is, its main heading, the story
teasers it lists and an article's fact box. Checked on every newsroom page type, site and
template version, on hand-written third-party markup, and on hostile input."""

from __future__ import annotations

import json
import time
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock

import pytest

from newsbench_dagster.core.reading.page import understand
from newsbench_dagster.core.reading.page_kind import KINDS
from newsbench_dagster.core.reading.page_record import Fact, PageRecord, Teaser
from newsbench_dagster.newsroom.catalog import SiteSpec
from newsbench_dagster.newsroom.routes import LISTING_PAGE, respond
from newsbench_dagster.newsroom.site_world import SiteWorld
from newsbench_dagster.newsroom.world import Newsroom
from tests.support.paths import FIXTURES as TEST_FIXTURES

AT = datetime(2026, 11, 30, 15, tzinfo=UTC)
PAGES = TEST_FIXTURES / "pages"


@pytest.fixture(scope="module")
def world() -> Newsroom:
    return Newsroom(seed=7)


def local_noon(spec: SiteSpec, day: date) -> datetime:
    return datetime.combine(day, clock(12), tzinfo=spec.tz).astimezone(UTC)


def instants(spec: SiteSpec) -> list[datetime]:
    """A day before and a day after each redesign: every template version of the site."""
    out = []
    for drift in spec.drifts:
        out += [
            local_noon(spec, drift.on - timedelta(days=1)),
            local_noon(spec, drift.on + timedelta(days=1)),
        ]
    return out


def read(site: SiteWorld, target: str, at: datetime) -> PageRecord:
    response = respond(site, target, at)
    return understand(response.body, site.url(target))


def summary_shown(site: SiteWorld) -> bool:
    # The grid family's tiles ("Kacheln") show no teaser text; the others do.
    return site.spec.template != "grid"


# -- kinds ---------------------------------------------------------------------------------
@pytest.mark.heavy(20)  # about 20 s on two busy cores
def test_every_newsroom_page_type_has_its_kind(world: Newsroom) -> None:
    versions: set[tuple[str, int]] = set()
    for spec in world.sites:
        site = world.site(spec.key)
        for at in instants(spec):
            versions.add((spec.template, site.version(at)))
            stories = site.stories(at, 20)
            where = f"{spec.key} v{site.version(at)} {at:%Y-%m-%d}"
            expected = {
                "/": "home",
                site.current_liveblog(at).path: "liveblog",
                "/corrections": "other",  # a notice page: corrections, no story teasers
                "/search?q=" + stories[0].headline.split()[-1]: "collection",
                "/search": "other",  # the search form, before any query
                "/no-such-page": "other",
                "/private/archive": "other",
                "/newsletter": "other",
                "/subscribe": "other",
                "/account/notifications": "other",
                "/corrections/report?url=" + stories[0].url: "other",
                "/sponsored/offer": "other",
            }
            for section in spec.sections:
                expected[site.section_path(section)] = "collection"
                expected[site.section_path(section) + "?page=2"] = "collection"
            for story in stories[:6]:
                expected[story.path] = "article"
                if spec.amp:
                    expected["/amp" + story.path] = "article"
            for name in site.vocab["authors"][:4]:
                if (path := site.author_path(name)) and site.author_stories(name, at):
                    expected[path] = "collection"
            for target, kind in expected.items():
                r = read(site, target, at)
                assert r.kind == kind, f"{where} {target}: {r.kind}"
                assert r.kind in KINDS
    # Every family and every version it has was seen.
    assert versions == {
        ("classic", 1),
        ("classic", 2),
        ("grid", 1),
        ("grid", 2),
        ("magazine", 1),
        ("magazine", 2),
        ("magazine", 3),
    }
    assert any(world.site(s.key).author_path("x") for s in world.sites)  # author pages exist


def test_every_feed_article_is_an_article_whatever_its_metadata_defect(world: Newsroom) -> None:
    quirks = set()
    for spec in world.sites:
        site = world.site(spec.key)
        for story in site.stories(AT, 20):
            r = read(site, story.path, AT)
            assert r.kind == "article", (story.url, story.quirk)
            quirks.add(story.quirk)
    assert {"missing_jsonld", "malformed_jsonld"} <= quirks


@pytest.mark.parametrize(
    ("markup", "url", "kind"),
    [
        (
            '<script type="application/ld+json">{"@type": "ReportageNewsArticle"}</script>',
            None,
            "article",
        ),
        (
            '<script type="application/ld+json">{"@type": "LiveBlogPosting"}</script>',
            None,
            "liveblog",
        ),
        (
            '<script type="application/ld+json">{"@type": ["WebPage", "ItemList"]}</script>',
            None,
            "collection",
        ),
        (
            '<script type="application/ld+json">{"@type": "CollectionPage"}</script>',
            None,
            "collection",
        ),
        ('<meta property="og:type" content="article">', None, "article"),
        ('<meta property="og:type" content="website">', "https://x.example/", "home"),
        ('<meta property="og:type" content="website">', "https://x.example/about", "other"),
        ('<link rel="canonical" href="https://x.example/">', None, "home"),
        ("", None, "other"),
    ],
)
def test_kind_from_metadata(markup: str, url: str | None, kind: str) -> None:
    page = f"<html><head>{markup}</head><body><main><p>Hello</p></main></body></html>"
    assert understand(page, url).kind == kind


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("yoast_graph.html", "article"),
        ("microdata_only.html", "article"),  # its "Most read" teaser is no listing either
        ("og_site_suffix.html", "article"),  # article:published_time, no og:type
        ("fr_liveblog.html", "liveblog"),
        ("no_metadata.html", "other"),  # an h1 and a paragraph, nothing that says "article"
    ],
)
def test_kind_of_saved_pages(name: str, kind: str) -> None:
    r = understand((PAGES / name).read_bytes())
    assert r.kind == kind and r.listing == () and r.factbox == ()


def test_kind_from_structure() -> None:
    teasers = "".join(
        f'<article><h3><a href="/s/{i}">Story number {i}</a></h3><p>Text {i}.</p></article>'
        for i in range(3)
    )
    assert understand(f"<html><body><main>{teasers}</main></body></html>").kind == "collection"
    article = (
        "<html><body><main><article><h1>A plain article</h1><p>One.</p><p>Two.</p></article>"
        "</main></body></html>"
    )
    assert understand(article).kind == "article"
    # A live blog without metadata: its visible entries say so.
    entries = "".join(
        f'<article class="live-entry" id="e{i}"><time datetime="2026-11-30T1{i}:00Z">x</time>'
        f"<p>Update {i}</p></article>"
        for i in range(3)
    )
    page = f'<html><body><main class="liveblog"><h1>Live</h1>{entries}</main></body></html>'
    assert understand(page).kind == "liveblog"


# -- listings ------------------------------------------------------------------------------
def test_section_pages_list_exactly_their_stories(world: Newsroom) -> None:
    for spec in world.sites:
        site = world.site(spec.key)
        for at in [AT, *instants(spec)]:
            for section in spec.sections:
                path = site.section_path(section)
                stories = site.section_stories(section, at, LISTING_PAGE * 5)
                for page_no in (1, 2):
                    target = path if page_no == 1 else f"{path}?page=2"
                    r = read(site, target, at)
                    shown = stories[(page_no - 1) * LISTING_PAGE : page_no * LISTING_PAGE]
                    assert shown, (spec.key, section)
                    assert list(r.listing) == [
                        Teaser(s.headline, s.url, s.summary if summary_shown(site) else None)
                        for s in shown
                    ], f"{spec.key} {target} v{site.version(at)}"
                    assert r.main_heading == spec.section_label(section)


def test_author_and_search_pages_list_their_stories(world: Newsroom) -> None:
    site = world.site("harbor")
    name = site.vocab["authors"][0]
    r = read(site, site.author_path(name), AT)
    stories = site.author_stories(name, AT)
    assert [(t.headline, t.url) for t in r.listing] == [(s.headline, s.url) for s in stories]
    assert r.main_heading == site.labels["author_title"].format(name=name)
    story = site.stories(AT, 5)[1]
    word = story.headline.split()[-1]
    r = read(site, f"/search?q={word}", AT)
    found = site.search(word, AT)
    assert [(t.headline, t.url, t.summary) for t in r.listing] == [
        (s.headline, s.url, s.summary) for s in found
    ]


def test_home_pages_list_the_lead_then_the_others(world: Newsroom) -> None:
    promos = 0
    for spec in world.sites:
        site = world.site(spec.key)
        for at in [*instants(spec), *(AT + timedelta(minutes=20 * i) for i in range(3))]:
            front = site.front_page(at)
            r = read(site, "/", at)
            where = f"{spec.key} v{site.version(at)} {at}"
            # Most read (outside main), the live teaser and a sponsored heading are no teasers.
            assert [t.url for t in r.listing] == [s.url for s in [front.lead, *front.others]]
            assert [t.headline for t in r.listing] == [
                s.headline for s in [front.lead, *front.others]
            ], where
            assert r.listing[0].summary == front.lead.summary, where
            if summary_shown(site):
                assert [t.summary for t in r.listing[1:]] == [s.summary for s in front.others]
            promos += site.deceptive_heading(at) is not None
    assert promos >= 1  # the adversarial sites showed a sponsored heading at least once


def test_listing_urls_are_absolute_and_other_pages_list_nothing(world: Newsroom) -> None:
    site = world.site("lac")
    r = read(site, site.section_path("sport"), AT)
    assert r.listing and all(t.url.startswith("http://lac-matin.test/") for t in r.listing)
    assert read(site, site.stories(AT, 1)[0].path, AT).listing == ()
    assert read(site, site.current_liveblog(AT).path, AT).listing == ()
    assert read(site, "/corrections", AT).listing == ()


def test_listing_markup_from_elsewhere() -> None:
    page = """<html><head><base href="https://paper.example/news/"></head><body>
    <header><nav><h2><a href="/politics">Politics</a></h2></nav></header>
    <main>
      <h1>Politics</h1>
      <ul class="stories">
        <li><a href="budget-vote"><h3>Council passes the budget</h3></a>
            <span class="kicker">Politics</span><p>The vote was 7 to 2.</p></li>
        <li><p class="dek">Summary comes first here.</p>
            <h3><a href="/news/bridge">Bridge to reopen</a></h3>
            <p class="byline">By Ann Lee</p></li>
        <li><h3><a href="/news/bridge#comments">Bridge to reopen (comments)</a></h3></li>
        <li><a class="headline" href="https://other.example/x">A link with a headline class</a>
            <p><time datetime="2026-11-30">Nov 30</time></p></li>
        <li><h3><a href="javascript:void(0)">Not a story</a></h3></li>
      </ul>
      <div class="promo"><h2><a href="/ad">Buy now</a></h2></div>
      <aside><h3><a href="/most-read-1">Most read one</a></h3></aside>
    </main>
    <footer><h3><a href="/about">About us</a></h3></footer>
    </body></html>"""
    r = understand(page, "https://paper.example/news/politics")
    assert r.listing == (
        Teaser(
            "Council passes the budget",
            "https://paper.example/news/budget-vote",
            "The vote was 7 to 2.",
        ),
        Teaser(
            "Bridge to reopen", "https://paper.example/news/bridge", "Summary comes first here."
        ),
        Teaser("A link with a headline class", "https://other.example/x", None),
    )
    assert r.kind == "collection" and r.main_heading == "Politics"


# -- fact boxes ----------------------------------------------------------------------------
def facts(record: PageRecord) -> list[tuple[str, str]]:
    return [(f.label, f.value) for f in record.factbox]


def article(body: str) -> str:
    return (
        '<html lang="en"><head><meta property="og:type" content="article"></head><body><main>'
        f"<article><h1>Flood wall approved</h1><p>The council voted.</p>{body}"
        "<p>More text.</p></article></main></body></html>"
    )


def test_third_party_factbox_as_a_table() -> None:
    page = article(
        '<div class="article-infobox"><table><caption>Fact box</caption>'
        "<thead><tr><th>What</th><th>Detail</th></tr></thead>"
        "<tr><th>Cost</th><td>$40 million</td></tr>"
        "<tr><td>Length:</td><td>  2.3\n km </td></tr>"
        "<tr><td>Completion</td><td>2028</td><td>(planned)</td></tr>"
        "<tr><td colspan='2'>Source: city council</td></tr></table></div>"
    )
    r = understand(page)
    assert r.factbox_title == "Fact box"
    assert facts(r) == [
        ("Cost", "$40 million"),
        ("Length", "2.3 km"),
        ("Completion", "2028 (planned)"),
    ]
    assert r.kind == "article" and r.main_heading == "Flood wall approved"


def test_unclassed_definition_list_under_a_key_facts_heading() -> None:
    page = article(
        "<h3>Key facts:</h3><dl><dt>Where</dt><dd>Riverside</dd><dt>Votes</dt><dd>7</dd>"
        "<dd>of 9</dd><dt>Who</dt><dd>Mayor Alice Porter</dd></dl>"
    )
    r = understand(page)
    assert r.factbox_title == "Key facts"
    assert facts(r) == [("Where", "Riverside"), ("Votes", "7, of 9"), ("Who", "Mayor Alice Porter")]


@pytest.mark.parametrize(
    ("title", "items", "expected"),
    [
        (
            "<h4>At a glance</h4>",
            "<li>Cost: $40 million</li><li>Start:  spring 2027 </li><li>Meeting: 10:30 a.m.</li>",
            [("Cost", "$40 million"), ("Start", "spring 2027"), ("Meeting", "10:30 a.m.")],
        ),
        (
            "<p><strong>Auf einen Blick</strong></p>",
            "<li><strong>Ort:</strong> Bonn</li><li><b>Zahl</b> 42</li>",
            [("Ort", "Bonn"), ("Zahl", "42")],
        ),
        (
            "<h2>L’essentiel</h2>",
            "<li><strong>Lieu\u00a0:</strong> Genève</li><li>Chiffre\u00a0: 12</li>",
            [("Lieu", "Genève"), ("Chiffre", "12")],
        ),
    ],
)
def test_label_value_list_items(title: str, items: str, expected: list) -> None:
    r = understand(article(f"{title}<ul>{items}</ul>"))
    assert facts(r) == expected
    assert r.factbox_title is not None


def test_factbox_found_by_class_keeps_its_own_title() -> None:
    page = article(
        '<section id="keyfacts" aria-label="The essentials"><ul>'
        "<li><span>Budget</span> €3m</li><li><span>Staff</span> 12</li></ul></section>"
    )
    r = understand(page)
    assert facts(r) == [("Budget", "€3m"), ("Staff", "12")]
    assert r.factbox_title == "The essentials"


def test_pages_without_a_factbox() -> None:
    # A data table, a bullet list under an ordinary heading, and a "Facts" heading over a list
    # that holds no label/value entries: none of them is a fact box.
    page = article(
        "<h2>Results</h2><table><tr><th>Ward</th><th>Votes</th></tr><tr><td>1</td><td>3</td>"
        "</tr></table><h3>What happens next</h3><ul><li>Deadline: Friday</li><li>Vote: June"
        "</li></ul><h3>Facts</h3><ul><li>The first item</li><li>The second item</li></ul>"
    )
    r = understand(page)
    assert r.factbox == () and r.factbox_title is None
    # Outside main and in the footer: a site-wide "infobox" in the footer is not the article's.
    page = (
        "<html><body><main><article><h1>T</h1><p>x</p></article></main><footer>"
        '<div class="infobox"><dl><dt>Phone</dt><dd>123</dd></dl></div></footer></body></html>'
    )
    assert understand(page).factbox == ()


def test_as_dict_shape(world: Newsroom) -> None:
    site = world.site("harbor")
    story = next(s for s in site.stories(AT, 40) if s.factbox)
    doc = understand(respond(site, story.path, AT).body, story.url).as_dict()
    assert doc["kind"] == "article" and doc["main_heading"] == story.headline
    assert doc["factbox_title"] == "Key facts"
    assert doc["factbox"] == [{"label": k, "value": v} for k, v in story.factbox]
    assert doc["listing"] == []
    json.dumps(doc)  # plain data
    section = site.section_path("city")
    doc = understand(respond(site, section, AT).body, site.url(section)).as_dict()
    assert doc["kind"] == "collection" and doc["factbox"] == [] and doc["factbox_title"] is None
    assert set(doc["listing"][0]) == {"headline", "url", "summary"}
    assert Fact("a", "b") == Fact(label="a", value="b")


# -- hostile input -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "page",
    [
        "<html><body><h1>No main</h1><aside class='factbox'><dl><dt>A</dt><dd>1</dd></dl>"
        "</aside><h2><a href='/x'>X</a></h2><h2><a href='http://[::1'>Broken</a></h2></body>",
        "<main><h1>Unclosed<dl class=factbox><dt>A<dd>1<dt>B<dd><table><tr><td>x<td>",
        "<main><table class='infobox'><tr><th></th><td></td></tr></table><dl class='factbox'>"
        "<dd>value without a label</dd></dl><ul class='key-points'><li>:</li><li></li></ul>",
        "<main><h3>Key facts</h3></main>",
        '<link rel="canonical" href="http://[::1"><main><h1>Broken canonical</h1></main>',
        "<main><caption>Key facts</caption><figcaption>En bref</figcaption></main>",
        '<html><body><main><a href="%%%"><h2></h2></a><h2><a href="">Empty</a></h2>'
        "<h2 role=heading><a href='/y'>\x01\ufffd</a></h2></main></body></html>",
        "<div>" * 3000 + "<h2><a href='/deep'>Deep</a></h2><p>summary</p>" + "</div>" * 3000,
    ],
)
def test_bad_markup_never_raises(page: str) -> None:
    r = understand(page, "https://x.example/page")
    assert r.is_html and r.kind in KINDS
    assert not [e for e in r.errors if e.startswith(("listing", "factbox", "kind", "main"))]
    r.as_dict()


def test_no_main_uses_the_page_minus_its_chrome() -> None:
    page = (
        "<html><body><header><h2><a href='/nav'>Nav</a></h2></header>"
        "<div><h2><a href='/a'>Story A</a></h2><p>About A.</p></div>"
        "<div><h2><a href='/b'>Story B</a></h2><p>About B.</p></div></body></html>"
    )
    r = understand(page, "https://x.example/section/")
    assert [(t.headline, t.url, t.summary) for t in r.listing] == [
        ("Story A", "https://x.example/a", "About A."),
        ("Story B", "https://x.example/b", "About B."),
    ]
    assert r.kind == "collection" and r.main_heading is None


@pytest.mark.heavy(20)  # about 20 s on two busy cores
def test_ten_megabytes_of_teasers_and_fact_boxes() -> None:
    head = '<html lang="en"><head><title>Big</title></head><body><main><h1>Big page</h1>'
    teaser = (
        '<article class="card"><h3><a href="/s/{i}">Story {i}</a></h3><p>{p}</p>'
        '<div class="infobox-{i}"><ul><li>Key {i}: value</li></ul></div></article>'
    )
    filler = "".join(teaser.format(i=i, p="lorem ipsum dolor sit amet " * 3) for i in range(45_000))
    data = (head + filler + "</main></body></html>").encode()
    assert len(data) > 10_000_000
    started = time.monotonic()
    r = understand(data, "https://big.example/section")
    assert r.headline == "Big page" and r.errors == ()
    assert len(r.listing) == 500 and r.listing[0] == Teaser(
        "Story 0",
        "https://big.example/s/0",
        "lorem ipsum dolor sit amet " * 2 + "lorem ipsum dolor sit amet",
    )
    assert facts(r) == [("Key 0", "value")] and r.kind == "collection"
    assert time.monotonic() - started < 30
