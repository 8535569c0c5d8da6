"""Drift: did a site change under us (template, feed volume), and did the baseline follow?"""
