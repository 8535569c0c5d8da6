"""Record and replay: WARC recordings (write, audit, merge), the matching rules, and a
recording served as a run's whole web.
"""
