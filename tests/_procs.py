"""Real ``nasflow`` processes for the reliability tests: start, watch their lines, kill."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class NasflowProcess:
    """``python -m nasflow.cli ARGS`` with its output read line by line as it comes.

    Args:
        args: Command-line arguments after ``nasflow``.
        cwd: Working folder.
        env: Extra environment variables.
    """

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.args = args
        full_env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",  # lines must arrive when they are printed
            "OMP_NUM_THREADS": "1",  # several processes share 2 cores
            **(env or {}),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nasflow.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=full_env,
            cwd=cwd,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, pattern: str, timeout: float = 240.0) -> re.Match[str]:
        """Block until a line matches ``pattern``; fail with the output on exit or timeout."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise AssertionError(f"no line matching {pattern!r} in time:\n{self.text}")
            try:
                line = self._queue.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"exited before a line matching {pattern!r}:\n{self.text}")
            if m := regex.search(line):
                return m

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no handler, no cleanup, nothing flushed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def finish(self, timeout: float = 300.0) -> int:
        """Wait for the exit; the return code."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"did not exit in {timeout}s:\n{self.text}") from None
        self._reader.join(timeout=10)
        return rc

    @property
    def text(self) -> str:
        return "\n".join(self.lines)
