"""Page understanding: what a page says about itself (headline, bylines, times, listings,
fact boxes), text normalisation and similarity.

Where things are:
- reading a page: page.py (`understand()`, combining the rest into a page_record.PageRecord);
  page_bytes.py (not-a-page sniffing, charset decoding, parsing) -> page_reader.py (the parsed
  page, its structured data via structured.py, and landmarks) -> one module per concern:
  headline.py, bylines.py (authors and site names; names.py says what a person's name looks
  like), language.py, timestamps.py, updates.py (live-blog updates, corrections), listing.py
  (story teasers), page_kind.py, factbox.py. Headline, authors and the publication date are
  voted on (evidence.py) from every signal, the field's libraries among them (libraries.py:
  trafilatura, htmldate); inspect.py is what `newsbench inspect` prints;
- a live page's metadata in one round trip: metadata.py (+ page_metadata.js);
- comparing texts: text.py (normalisation, fuzzy matching, times); semantic.py (choosing a
  similarity backend) over lexical_similarity.py and minilm.py (numpy encoder), whose model
  files minilm_model.py finds and extracts.
"""
