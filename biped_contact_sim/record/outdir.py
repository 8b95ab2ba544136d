"""A run's output folder: claimed by one run at a time, and cleared only of what runs wrote.

Two files beside the outputs make the folder the run's
(docs/architecture.md "Outputs that survive a stop"):

* ``.biped-sim.lock`` holds the pid of the run writing there, under an exclusive ``flock``: a
  second run into the same folder is refused while the first one lives (``OutputError``,
  exit 3, naming its pid). The kernel drops the lock when its process dies, however it dies, so
  a lock left by a killed run is taken over by the next one.
* ``.biped-sim-manifest.json`` lists the files the last run wrote (relative paths). A new run
  deletes those, and only those, before writing its own: a user's file in the folder (notes,
  ``plots/old.png``) is never touched. A folder without a manifest has nothing deleted (files
  of the same names are replaced as they are written).

The manifest names a file before it is created, so a run killed while writing still leaves
the file listed for the next run to remove.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from types import TracebackType

LOCK_FILE = ".biped-sim.lock"
MANIFEST_FILE = ".biped-sim-manifest.json"
WRITE_PROBE = ".biped-sim-write-test"


class OutputError(Exception):
    """The output folder cannot be created or written, or another run holds it (the message
    names it and why)."""


class OutputFolder:
    """An output folder and the files this run writes into it.

    ``OutputFolder(path)`` only keeps the manifest (scripts, tests); :meth:`claim` also creates
    and checks the folder and takes its lock (``biped-sim run``). Use it as a context manager
    (or call :meth:`release`).

    Args:
        path: The folder.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.files: list[str] = []  # what this run wrote (or is writing), relative to path
        self._lock_fd: int | None = None
        self._cleared = False

    @classmethod
    def claim(cls, path: str | Path, option: str = "--out") -> OutputFolder:
        """Create ``path`` if needed, check that it is a writable folder and lock it.

        Args:
            path: The folder.
            option: How the user named it, for the messages.

        Raises:
            OutputError: not a folder, cannot be created or written, or another live run
                holds it.
        """
        folder = cls(path)
        path = folder.path
        if path.exists() and not path.is_dir():
            raise OutputError(f"{option} {path}: exists and is not a folder")
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / WRITE_PROBE
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise OutputError(f"{option} {path}: cannot write there ({exc.strerror or exc})"
                              ) from exc
        folder._lock(option)
        return folder

    def _lock(self, option: str) -> None:
        """Take the folder's lock and write our pid in it (module docstring)."""
        lock_path = self.path / LOCK_FILE
        while True:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise OutputError(
                    f"{option} {self.path}: another run (pid {holder}) is writing there; wait "
                    "for it to end or choose another folder") from None
            # The previous holder may have removed the file between our open and our lock:
            # then we hold a lock on a file nobody else will see. Try again on the new one.
            try:
                same = os.fstat(fd).st_ino == os.stat(lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def release(self) -> None:
        """Give the folder up (remove the lock file while holding it, then unlock);
        idempotent."""
        if self._lock_fd is None:
            return
        try:
            (self.path / LOCK_FILE).unlink(missing_ok=True)
        finally:
            os.close(self._lock_fd)  # closing drops the flock
            self._lock_fd = None

    def __enter__(self) -> OutputFolder:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def previous_files(self) -> list[str]:
        """The files the manifest says the previous run wrote (relative paths inside the
        folder; an unreadable manifest counts as none)."""
        try:
            names = json.loads((self.path / MANIFEST_FILE).read_text())["files"]
        except (OSError, ValueError, KeyError, TypeError):
            return []
        return [n for n in names if isinstance(n, str) and _inside(n)]

    def clear_previous(self) -> None:
        """Delete the previous run's files (its manifest's, nothing else) and empty folders
        it leaves behind, then start this run's manifest; done once (later calls do
        nothing)."""
        if self._cleared:
            return
        self._cleared = True
        for name in self.previous_files():
            path = self.path / name
            if path.is_file() or path.is_symlink():
                path.unlink(missing_ok=True)
                parent = path.parent
                while parent != self.path and not any(parent.iterdir()):
                    parent.rmdir()  # plots/ once its figures are gone (unless the user's)
                    parent = parent.parent
        self._save()

    def will_write(self, *paths: str | Path) -> None:
        """Add files to the manifest before they are written.

        Args:
            paths: Files inside the folder (e.g. ``folder.path / "summary.json"``).
        """
        self.clear_previous()
        root = os.path.abspath(self.path)
        for path in paths:
            name = Path(os.path.relpath(os.path.abspath(path), root)).as_posix()
            if not _inside(name):
                raise ValueError(f"{path} is not inside the output folder {self.path}")
            if name not in self.files:
                self.files.append(name)
        self._save()

    def _save(self) -> None:
        """Write the manifest atomically (a reader sees the old one or the new one)."""
        tmp = self.path / (MANIFEST_FILE + ".tmp")
        tmp.write_text(json.dumps({"written_by": "biped-sim", "pid": os.getpid(),
                                   "files": self.files}, indent=1) + "\n")
        os.replace(tmp, self.path / MANIFEST_FILE)


def _inside(name: str) -> bool:
    """True for a relative path that stays inside the folder (a manifest edited to say
    ``../x`` or ``/home/...`` must not make a run delete files elsewhere)."""
    path = Path(name)
    return not path.is_absolute() and ".." not in path.parts and name not in (
        LOCK_FILE, MANIFEST_FILE)
