"""``biped-sim bench --ros`` (``ros/bench.py``) runs its loops: one short window of the default
demo's loop in each mode gives a positive rate, the hardware form's controller reports its
deadlines, nothing diverges. (The figures themselves are benchmarks: docs/benchmarks.md.)"""

from biped_contact_sim.ros import bench


def test_the_ros_bench_measures_every_mode():
    rows = bench.run(1.0, bench.LOOPS[:1], ("separate",), report=lambda line: None)
    assert [row["mode"][:8] for row in rows] == ["lockstep", "lockstep", "hardware"]
    for row in rows:
        assert row["periods_per_s"] > 0 and row["simulated_s"] > 0, row
        assert row["diverged"] == ""
    assert rows[2]["controller_missed_fraction"] is not None
