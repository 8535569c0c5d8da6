"""Pages built to stall a reader: a page that opens with dozens of comments (a dev-set page
has 139) is read at once, and a feed behind comments is still told apart from a page."""

from __future__ import annotations

import subprocess
import sys

from newsbench_dagster.core.reading.page_bytes import sniff_non_html

COMMENTED = (
    "<!--?xml version='1.0'?-->\n"
    + "<!-- ad slot -->\n" * 60
    + (
        "<html><head><title>Bridge reopens</title></head>"
        "<body><h1>Bridge reopens</h1></body></html>"
    )
)


def test_a_page_that_opens_with_many_comments_is_read_at_once():
    # In a child process with a deadline: the pattern that backtracked took hours here.
    code = (
        "import sys; from newsbench_dagster.core.reading.page import understand; "
        "r = understand(sys.stdin.read()); print(r.is_html, r.headline)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=COMMENTED, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True Bridge reopens"


def test_a_feed_behind_comments_is_still_not_a_page():
    feed = "<?xml version='1.0'?>\n<!-- generated -->\n<!-- cached -->\n<rss version='2.0'>"
    assert sniff_non_html(feed) == "XML feed or sitemap"
    assert sniff_non_html(COMMENTED) is None
