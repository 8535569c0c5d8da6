"""Page understanding: what a page says about itself (headline, bylines, times, listings,
fact boxes), text normalisation and similarity.
"""
