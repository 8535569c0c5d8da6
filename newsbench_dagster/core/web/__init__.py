"""The web as the pipeline reads it: the site allowlist, the polite fetcher (robots.txt,
rate limits, routing) and feed parsing.
"""
