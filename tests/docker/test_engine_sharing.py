"""The test engine is shared by every test process and bench that holds it, and stopped by the last one."""

from __future__ import annotations

import subprocess
import sys

from testkit import dockerd as engine


def test_the_engine_is_not_stopped_while_a_user_holds_it(dockerd) -> None:
    # This pytest process holds the engine (the session fixture): another process asking to stop it fails.
    proc = subprocess.run(
        [sys.executable, "-m", "testkit.dockerd", "--stop"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "not stopped" in proc.stdout
    assert engine._ping()


def test_a_second_user_leaving_does_not_stop_it_for_the_first(dockerd) -> None:
    with engine.use_dockerd() as info:
        assert info.reused
    assert engine._ping()
