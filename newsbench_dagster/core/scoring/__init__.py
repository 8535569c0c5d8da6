"""Scoring: the independent checkers (one module per intent), grading layers, reward,
witness, failure classes, PII and compliance.
"""
