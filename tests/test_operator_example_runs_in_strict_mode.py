"""The docs' operator-testing example (examples/test_operator_example.py) passes in a project
that does not set pytest-asyncio's auto mode (strict, the default)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_example_passes_in_strict_mode(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # a project without asyncio_mode
    example = (ROOT / "examples" / "test_operator_example.py").read_text()
    (tmp_path / "test_operator_example.py").write_text(example)
    # without the installed plugins the example does not use: hypothesis' alone imports for
    # 1.5 s of CPU (the run took 4.6 s for 0.2 s of tests)
    unused = ("-p", "no:hypothesispytest", "-p", "no:benchmark")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *unused, str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
