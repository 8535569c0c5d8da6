"""Tasks: the contract (schema, ids), one module per intent, polling and producing tasks from
feeds, curated suites and seeded samples.
"""
