"""The release policy: one set of defaults, one baseline rule, numbers validated by name."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from newsbench_dagster.core.agents.protocol import AgentManifest
from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.release.policy import Policy, choose_baseline


def _m(name: str, channel: str, version: str = "1") -> AgentManifest:
    return AgentManifest(name=name, version=version, adapter="reference", channel=channel)


def test_the_baseline_rule_named_then_same_name_then_the_only_main_one():
    ref, mine_main, cand = _m("ref", "main"), _m("mine", "main"), _m("mine", "candidate", "2")
    both = [ref, mine_main, cand]
    # 1. the policy names it: that one, even when the candidate's own name has a main one
    assert choose_baseline(cand, both, "ref") is ref
    # 2. else the main-channel manifest of the candidate's own name
    assert choose_baseline(cand, both) is mine_main
    # 3. else the only main-channel manifest
    other = _m("other", "candidate")
    assert choose_baseline(other, [ref, other]) is ref


def test_no_baseline_is_an_error_that_names_the_choices():
    ref, mine_main, other = _m("ref", "main"), _m("mine", "main"), _m("other", "candidate")
    with pytest.raises(ConfigError, match=r"2 main-channel manifests \(ref@1\+\w+, mine@1\+"):
        choose_baseline(other, [ref, mine_main, other])
    with pytest.raises(ConfigError, match="no main-channel manifest named 'nobody'"):
        choose_baseline(other, [ref, other], "nobody")
    with pytest.raises(ConfigError, match=r"\(none\)"):
        choose_baseline(other, [other])


def test_bad_numbers_are_refused_by_name_and_the_policy_is_stored_whole():
    with pytest.raises(ValidationError, match="trials"):
        Policy(trials=0)
    with pytest.raises(ValidationError, match="interval"):
        Policy(interval="whole-web")
    stored = Policy(trials=3).as_dict()
    assert stored["trials"] == 3 and stored["heldout_n"] == Policy().heldout_n
    assert Policy(**stored) == Policy(trials=3)
