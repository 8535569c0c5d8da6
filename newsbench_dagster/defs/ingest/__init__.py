"""Ingest: poll each allowlisted site's feeds, sitemaps and homepage, and make tasks."""
