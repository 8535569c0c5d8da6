// Runs in the page: metadata, landmarks, headings, bylines and times in one round trip.
// Dependency-free and bounded (at most 40 headings, 10 bylines, 20 times).
() => {
  const text = (el) => (el ? (el.innerText || el.textContent || '').replace(/\s+/g, ' ').trim() : null);
  const meta = {};
  for (const m of document.querySelectorAll('meta')) {
    const key = (m.getAttribute('property') || m.getAttribute('name') || m.getAttribute('itemprop') || '').toLowerCase();
    const value = m.getAttribute('content');
    if (!key || value === null) continue;
    (meta[key] = meta[key] || []).push(value);
  }
  const jsonld = Array.from(document.querySelectorAll('script[type="application/ld+json"]')).map((s) => s.textContent);
  const link = (rel) => { const l = document.querySelector(`link[rel~="${rel}"]`); return l ? l.href : null; };
  const main = document.querySelector('main, [role="main"]');
  const vh = window.innerHeight;
  const visible = (el) => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
    return r.width > 1 && r.height > 1 && s.visibility !== 'hidden' && s.display !== 'none'; };
  const headings = [];
  if (main) {
    for (const h of main.querySelectorAll('h1, h2, h3, h4, [role="heading"]')) {
      if (headings.length >= 40) break;
      const a = h.querySelector('a[href]') || h.closest('a[href]');
      const r = h.getBoundingClientRect();
      headings.push({
        tag: h.tagName.toLowerCase(),
        level: Number(h.getAttribute('aria-level')) || Number(h.tagName.slice(1)) || null,
        text: text(h), href: a ? a.href : null, top: Math.round(r.top + window.scrollY),
        visible: visible(h), above_fold: r.top < vh && r.bottom > 0,
        in_article: !!h.closest('article'),
      });
    }
  }
  const firstArticle = main ? main.querySelector('article') : null;
  let lead = null;
  if (firstArticle) {
    const h = firstArticle.querySelector('h1, h2, h3, [role="heading"]');
    const a = (h && (h.querySelector('a[href]') || h.closest('a[href]'))) || firstArticle.querySelector('a[href]');
    lead = { heading: text(h), href: a ? a.href : null };
  }
  // Byline containers, outermost only (a link inside a byline is the same byline).
  const BYLINE = '[rel~="author"], [itemprop~="author"], [class*="byline"], '
    + '[class*="author"], [class*="autor"], [class*="signature"]';
  const bylines = Array.from(document.querySelectorAll(BYLINE))
    .filter((el) => !el.parentElement || !el.parentElement.closest(BYLINE))
    .slice(0, 10).map(text).filter(Boolean);
  const times = Array.from(document.querySelectorAll('time')).slice(0, 20)
    .map((t) => ({ datetime: t.getAttribute('datetime'), text: text(t) }));
  return {
    url: location.href, title: document.title, lang: document.documentElement.lang || null,
    meta, jsonld, canonical: link('canonical'), amphtml: link('amphtml'),
    has_main: !!main, headings, lead, bylines, times, viewport_height: vh,
  };
}
