"""The evidence a release decision asks for, in one place for the policy (its defaults), the
statistics and the sequential test. Plain numbers: the CLI reads them for its help without
importing numpy."""

# Fewer tasks than this and a rate, a difference or a gate says "insufficient evidence".
MIN_TASKS = 20

# The regression the gate must catch (5 points: blocked >= 95 % of the time within the default
# budget) is also its non-inferiority margin, so the design is symmetric: a candidate about
# 2.5 points worse is where pass turns into block (benchmarks/gate_power.py).
MARGIN = -0.05
