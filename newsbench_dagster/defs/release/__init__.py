"""Release: a candidate agent version against the shipped baseline, its decision record, the
regression and compliance gates, and the sensor that starts it."""
