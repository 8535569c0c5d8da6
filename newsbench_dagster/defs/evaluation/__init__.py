"""Evaluation: every task run by the main-channel agents, scored by the independent checkers;
the compliance gate; the nightly sweep and the hourly canary."""
