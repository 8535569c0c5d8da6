"""Record and replay: WARC files (`warc`), what is stripped before writing (`redact`),
recording pages and live runs (`recorder`), auditing and merging recordings (`audit`,
`merge`), the matching rules (`matching`), and a recording served as a run's whole web
(`replayer`).
"""
