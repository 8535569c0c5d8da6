"""What tests ask the task producer for."""

# The lead story and an article's metadata: the intents most tests build their tasks from.
LEAD_AND_METADATA = ("find_top_headline", "extract_article_metadata")
