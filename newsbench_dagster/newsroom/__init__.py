"""A simulated news web for evaluating browser agents.

Several fictional news sites (`*.test` hosts) served from one loopback HTTP server. Content is a
pure function of (seed, site, time); ground truth is read through the Python API, never from the
pages. This package must not import dagster.

Where things are:
- the content model: catalog.py (site specs), stories.py (the story stream), liveblogs.py,
  site_world.py (one site over time), world.py (Newsroom: every site for one seed), truth.py;
  clock.py, seeding.py and text.py hold the helpers they share;
- serving it: server.py (HTTP proxy and control API) -> routes.py (one request to one site) ->
  pages.py, feeds.py (rendered with templating.py) and forms.py (state-changing pages:
  form_fields.py, form_visit.py, form_variant.py, reader_forms.py, checkout.py); exchange.py
  and state.py hold the request/response and the per-run state;
- running it: __main__.py (serve), launcher.py (reuse or start one), variation.py (form variants).
"""
