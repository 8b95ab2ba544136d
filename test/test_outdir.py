"""Output folders owned by the run: a run deletes only the files the previous run wrote (its
manifest), refuses a folder another live run holds, and takes over the lock of a dead one."""

import json
import os
import signal

import pytest
from run_helpers import biped_sim, recording

from biped_contact_sim.cli import main as cli
from biped_contact_sim.record.outdir import LOCK_FILE, MANIFEST_FILE, OutputError, OutputFolder

QUICK = ("-q", "run", "ball", "--duration", "0.01", "--no-replay")


def test_a_reused_folder_loses_only_the_previous_runs_files(tmp_path):
    assert cli.main([*QUICK, "--out", str(tmp_path)]) == 0
    first = json.loads((tmp_path / MANIFEST_FILE).read_text())["files"]
    assert "summary.json" in first and any(f.startswith("plots/") for f in first)
    (tmp_path / "plots" / "old.png").write_text("the user's figure")
    (tmp_path / "notes.txt").write_text("the user's notes")
    (tmp_path / "replay.html").write_text("the user's own page of that name")
    assert cli.main([*QUICK, "--no-plots", "--out", str(tmp_path)]) == 0
    # the first run's figures are gone (this run made none), the user's files are all there
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["old.png"]
    assert (tmp_path / "notes.txt").read_text() == "the user's notes"
    assert (tmp_path / "replay.html").read_text() == "the user's own page of that name"
    second = json.loads((tmp_path / MANIFEST_FILE).read_text())["files"]
    assert not any(f.startswith("plots/") for f in second) and "trace.mcap" in second


def test_a_manifest_cannot_point_outside_the_folder(tmp_path):
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("keep")
    (out / MANIFEST_FILE).write_text(json.dumps({"files": ["../victim.txt", str(victim)]}))
    assert cli.main([*QUICK, "--no-plots", "--out", str(out)]) == 0
    assert victim.read_text() == "keep"


def test_a_folder_held_by_a_live_run_is_refused_and_a_dead_runs_lock_taken_over(tmp_path,
                                                                                capsys):
    holder = biped_sim("run", "ramp", "--duration", "600", "--no-plots", "--out",
                       str(tmp_path))
    try:
        recording(tmp_path, holder, size=1000)
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(holder.pid)
        assert cli.main([*QUICK, "--out", str(tmp_path)]) == cli.EXIT_OUTPUT
        err = capsys.readouterr().err
        assert err.startswith(f"error: --out {tmp_path}: another run (pid {holder.pid}) is "
                              "writing there") and "Traceback" not in err
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=60)
    # killed: its lock file is left behind with its pid, and the next run takes it over
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(holder.pid)
    assert cli.main([*QUICK, "--no-plots", "--out", str(tmp_path)]) == 0
    assert not (tmp_path / LOCK_FILE).exists()
    assert json.loads((tmp_path / "summary.json").read_text())["outcome"] == "completed"


def test_the_lock_is_exclusive_within_a_process_too(tmp_path):
    with OutputFolder.claim(tmp_path):
        with pytest.raises(OutputError, match=f"another run \\(pid {os.getpid()}\\)"):
            OutputFolder.claim(tmp_path)
    with OutputFolder.claim(tmp_path):  # released: free again
        pass
