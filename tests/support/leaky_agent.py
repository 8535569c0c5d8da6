"""A command-line agent that leaks the secret it is given everywhere it can, for the tests of
secret redaction (core.secrets):

    python tests/support/leaky_agent.py CDP_URL ANSWER_FILE ENTRY_URL   (secret in LEAKY_SECRET)

It prints the secret to stdout and stderr; attaches to the run's Chromium over CDP; navigates
to the entry page with the secret in the query (as is, base64, URL-encoded); logs it to the
browser console (log and error); sets it as the page's title, as an ARIA label and a
heading; types it into a field; and answers it (headline, and the URL it went to).
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from playwright.sync_api import sync_playwright

LEAK_JS = """(s) => {
  console.log('agent log: ' + s);
  console.error('agent error: ' + s);
  document.title = 'title ' + s;
  document.body.setAttribute('aria-label', 'label ' + s);
  const heading = document.createElement('h2');
  heading.textContent = 'heading ' + s;
  const field = document.createElement('input');
  field.id = 'leak';
  field.setAttribute('aria-label', 'search ' + s);
  document.body.prepend(heading, field);
}"""


def main() -> int:
    cdp_url, answer_file, entry = sys.argv[1:4]
    secret = os.environ["LEAKY_SECRET"]
    print(f"stdout: the secret is {secret}", flush=True)
    print(f"stderr: the secret is {secret}", file=sys.stderr, flush=True)
    b64 = base64.b64encode(secret.encode()).decode()
    query = f"plain={secret}&b64={b64}&enc={quote(secret, safe='')}"
    url = urlunsplit(urlsplit(entry)._replace(query=query))
    with sync_playwright() as pw:
        browser = pw.chromium.connect_over_cdp(cdp_url)
        page = next(p for c in browser.contexts for p in c.pages if p.url.startswith(entry))
        page.goto(url, wait_until="domcontentloaded")
        page.evaluate(LEAK_JS, secret)
        page.fill("#leak", secret)
        answer = {"headline": f"headline {secret}", "url": url}
        Path(answer_file).write_text(json.dumps(answer), encoding="utf-8")
        browser.close()  # over CDP: disconnects, the harness's browser stays
    return 0


if __name__ == "__main__":
    sys.exit(main())
