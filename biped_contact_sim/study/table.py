"""A study's results on disk: the durable row journal and the finished table.

* ``rows.jsonl`` — the journal: one JSON line per finished run, appended, flushed and
  ``fsync``-ed by the process that collects the results as each run ends. A crash loses at
  most the runs in flight; a line torn by the crash is cut off when the journal is opened
  again. ``--resume`` reads it to skip the runs whose row exists. It is the source of truth.
* ``results.parquet`` and ``results.csv`` — the table: the journal's rows of the study, one
  per run id, in the design's order, columns in a fixed order. Rewritten (atomically) at the
  end of every sweep; Parquet needs pyarrow, the CSV does not.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

JOURNAL = "rows.jsonl"
PARQUET = "results.parquet"
CSV = "results.csv"
STUDY_COPY = "study.yaml"  # the study file as run, for `sweep report`
FIGURE = "summary.png"  # the summary figure (study/figure.py)


class Journal:
    """The append-only row journal of an output folder (module docstring)."""

    def __init__(self, out_dir: str | Path):
        self.path = Path(out_dir) / JOURNAL
        self._file = None

    def exists(self) -> bool:
        """True if the folder already holds a journal (an earlier or crashed sweep)."""
        return self.path.exists()

    def read(self) -> dict[str, dict[str, Any]]:
        """{run id: row} of the journal, the first row of an id winning; a torn last line
        (a crash while writing it) is ignored."""
        rows: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return rows
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # torn by a crash: the run is redone
                row = json.loads(line)
                rows.setdefault(row["run_id"], row)
        return rows

    def open(self) -> Journal:
        """Open for appending, first cutting a torn last line (so the next row starts on a
        line of its own)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            data = self.path.read_bytes()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                with open(self.path, "r+b") as f:
                    f.truncate(end)
        self._file = open(self.path, "a", encoding="utf-8")  # closed by close()
        return self

    def append(self, row: dict[str, Any]) -> None:
        """Write one row durably: it is on disk when this returns."""
        self._file.write(json.dumps(row, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> Journal:
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def write_table(rows: list[dict[str, Any]], columns: list[str], out_dir: str | Path
                ) -> tuple[list[Path], str | None]:
    """Write ``results.csv`` and, with pyarrow, ``results.parquet``.

    Returns:
        (written paths, a note when Parquet was skipped or None).
    """
    out_dir = Path(out_dir)
    written = [_write_csv(rows, columns, out_dir / CSV)]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return written, (f"{PARQUET} skipped: pyarrow is not installed (pip install pyarrow, "
                         "or pip install '.[cluster]')")
    arrays = [_arrow_column(pa, [row.get(c) for row in rows]) for c in columns]
    table = pa.Table.from_arrays(arrays, names=list(columns))
    tmp = out_dir / (PARQUET + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, out_dir / PARQUET)
    written.append(out_dir / PARQUET)
    return written, None


def _arrow_column(pa, values: list[Any]):
    """A column as its natural Arrow type; a column of mixed kinds (a choice axis of numbers
    and names) as text."""
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _write_csv(rows: Iterable[dict[str, Any]], columns: list[str], path: Path) -> Path:
    """The table as CSV: empty cells for None, floats with every digit (repr)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if row.get(c) is None else row.get(c) for c in columns])
    os.replace(tmp, path)
    return path


def read_table(out_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of a finished study: ``results.parquet`` if pyarrow can read it, else the
    journal.

    Raises:
        FileNotFoundError: the folder holds neither.
    """
    out_dir = Path(out_dir)
    parquet = out_dir / PARQUET
    if parquet.exists():
        try:
            import pyarrow.parquet as pq
        except ImportError:
            pass
        else:
            return pq.read_table(parquet).to_pylist()
    journal = Journal(out_dir)
    if not journal.exists():
        raise FileNotFoundError(out_dir / JOURNAL)
    return list(journal.read().values())


__all__ = ["CSV", "FIGURE", "JOURNAL", "PARQUET", "STUDY_COPY", "Journal", "read_table",
           "write_table"]
