"""Smoke test of examples/learn_throw (the paper's throwing game): one short epoch runs,
the loss is finite, and the outputs are written."""

import json
import os
import pathlib
import subprocess
import sys

import addsim


def test_learn_throw_runs(source_dir, tmp_path):
    script = source_dir / "examples" / "learn_throw" / "learn_throw.py"
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(addsim.__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, str(script), "--out", str(tmp_path), "--epochs", "1", "--train", "10",
                          "--test", "5", "--frictions", "0.5", "0.0"], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    history = metrics["history_mu0.5"]
    assert len(history) == 2 and history[1]["skipped_batches"] == 0
    assert 0.0 < history[0]["test_error_median_m"] < 1.0
    assert (tmp_path / "learning_curve.png").stat().st_size > 0 and (tmp_path / "friction.png").stat().st_size > 0
