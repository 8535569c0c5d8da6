"""What a feed or homepage may not smuggle in: entity declarations are refused wherever
they stand outside a comment or CDATA section, in any encoding (quoted in an article they are
text, not declarations), and a homepage's charset lie is repaired and said."""

from __future__ import annotations

from newsbench_dagster.core.web.feed_bytes import entity_declarations
from newsbench_dagster.core.web.feeds import parse_document

RSS = (
    '<?xml version="1.0" encoding="{enc}"?>\n{doctype}<rss version="2.0"><channel><title>t</title>'
    "<item><title>{title}</title><link>http://q.test/a</link></item></channel></rss>"
)
DECLARES = '<!DOCTYPE rss [<!-- a comment --><!ENTITY e "x">]>\n'


def test_declarations_are_found_in_any_encoding_and_quoted_ones_are_not():
    refused = parse_document(
        RSS.format(enc="utf-16", doctype=DECLARES, title="&e;").encode("utf-16"), "http://q.test/f"
    )
    assert refused.error and refused.error.startswith("entity declarations refused")
    assert not refused.items
    # The same words in a CDATA section or a comment are an article's text.
    quoted = RSS.format(
        enc="utf-8",
        doctype="<!-- no <!ENTITY here -->\n",
        title="<![CDATA[How <!ENTITY x> bombs work]]>",
    )
    parsed = parse_document(quoted.encode(), "http://q.test/f")
    assert (
        parsed.error is None
        and [i.title for i in parsed.items] == ["How bombs work"]
        or [i.title for i in parsed.items] == ["How <!ENTITY x> bombs work"]
    )
    # A comment that never closes cannot hide a declaration after it either: it is one
    # token to the end, and the document is then not XML at all.
    assert entity_declarations(b"<!DOCTYPE r [<!ENTITY a 'b'>]><!-- open") is not None
    assert entity_declarations(b'<!DOCTYPE rss PUBLIC "-//Netscape//DTD RSS 0.91//EN" "x">') is None


def test_a_homepage_declared_utf8_in_cp1252_bytes_is_repaired_and_said():
    page = (
        "<!doctype html><html lang='fr'><head><meta charset='utf-8'></head><body><main>"
        "<h2><a href='/a'>Café crème à l'Élysée</a></h2>"
        "<h2><a href='/b'>Fête de la musique : les élus déçus</a></h2></main></body></html>"
    ).encode("cp1252")
    titles = ["Café crème à l'Élysée", "Fête de la musique : les élus déçus"]
    parsed = parse_document(page, "http://q.test/", "homepage")
    assert [i.title for i in parsed.items] == titles
    assert parsed.warning == "encoding: declared utf-8 (9 invalid bytes) set aside, read as cp1252"
    clean = parse_document(page.decode("cp1252").encode("utf-8"), "http://q.test/", "homepage")
    assert clean.warning is None and [i.title for i in clean.items] == titles
