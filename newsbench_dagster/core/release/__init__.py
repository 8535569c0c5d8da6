"""The release path: the gate's policy, the task set, the paired evaluation and the
decision.
"""
