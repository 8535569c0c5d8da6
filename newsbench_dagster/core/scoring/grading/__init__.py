"""Per-task grading layers for replayed browser-agent runs (WARC-Bench style).

A grading spec has four optional layers: `extract` pulls typed fields out of the agent's
answer, `require` compares them (any failure scores 0), `checks` are yes/no questions decided
by a program or a judge (required ones gate the run, weighted ones give partial credit), and
`trace` rules look at the requests the agent made during the replay (a forbidden order, an
add-to-cart the recording never answered). Nothing unverified is ever counted as passed.

One module per layer of the work: `spec` (the spec's models, and loading it with errors that
name the field path), `extract` (typed fields out of the answer), `compare` (the comparisons of
require and program checks), `trace` (the rules on the replay's requests) and `grade` (judging
the checks and the result of a run).
"""
