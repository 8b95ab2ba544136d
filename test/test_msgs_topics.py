"""Stamps, diagnostics fields and the topic table (biped_contact_sim/msgs: stamps.py,
messages.py, topics.py)."""


import numpy as np
import pytest
from ros_logic_helpers import MS

from biped_contact_sim.msgs import messages, stamps, topics


def test_stamps_are_exact_nanoseconds():
    assert stamps.stamp_ns(0.001) == 1 * MS
    assert stamps.stamp_ns(sum([0.001] * 1000)) == 1_000_000_000
    assert stamps.stamp_fields(1_700_000_000_123_456_789) == {"sec": 1_700_000_000,
                                                              "nanosec": 123_456_789}
    assert stamps.ns_from_stamp(3, 5) == 3_000_000_005


def test_diagnostic_and_multiarray_fields():
    status = messages.diagnostic_status(messages.DIAG_WARN, "n", "m", "hw", {
        "f": 0.123456789, "i": 3, "b": True, "arr": np.array([1.0, 2.5]), "none": None,
        "names": ("left_foot", "right_foot")})
    assert status["level"] == b"\x01"
    assert status["values"] == [
        {"key": "f", "value": "0.123457"}, {"key": "i", "value": "3"},
        {"key": "b", "value": "true"}, {"key": "arr", "value": "1, 2.5"},
        {"key": "none", "value": ""}, {"key": "names", "value": "left_foot, right_foot"}]
    with pytest.raises(ValueError):
        messages.diagnostic_status(7, "n", "m", "hw", {})
    arr = messages.float64_multi_array(np.arange(6), "internal")
    assert arr == {"layout": {"dim": [{"label": "internal", "size": 6, "stride": 6}],
                              "data_offset": 0},
                   "data": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}


def test_topic_table_resolves_names_as_the_nodes_and_the_trace_write_them():
    """One entry per topic: relative and absolute names, ``{foot}`` filled in."""
    assert topics.absolute(topics.JOINT_STATES) == "/joint_states"
    assert topics.absolute(topics.CLOCK) == "/clock"
    wrench = topics.TOPICS[topics.CONTACT_WRENCH]
    for name in ("contact_wrench/left_foot", "/contact_wrench/l_hand"):
        assert topics.topic(name) is wrench
    assert topics.topic("/joint_states") is topics.topic("joint_states")
    assert topics.topic("/cop/right_foot").type == "geometry_msgs/msg/PointStamped"
    assert {n for n, e in topics.TOPICS.items() if e.latched} == {topics.TF_STATIC,
                                                                  topics.ROBOT_DESCRIPTION}
    assert {n for n, e in topics.TOPICS.items() if e.per_period} == {
        topics.CLOCK, topics.JOINT_STATES, topics.ODOM, topics.CONTACT_WRENCH,
        topics.JOINT_TORQUE_CMD}
    for bad in ("contact_wrench/", "contact_wrench/a/b", "/nope"):
        with pytest.raises(KeyError, match="the topics are"):
            topics.topic(bad)
