#!/usr/bin/env python3
"""Reads CSV files as a user's script would and prints what it got.

For each FILE: one JSON line {"file", "columns", "rows", "pandas_columns"}:
the header row and the data rows as Python's csv module reads them with its
defaults, and the columns pandas.read_csv reads with its defaults (null when
pandas is not installed). Exits 1, naming the file, when a row's length
differs from the header's or pandas reads other columns than csv does.
Standard library only (pandas optional).
"""
import csv
import json
import sys

try:
    import pandas
except ImportError:
    pandas = None


def main(paths):
    status = 0
    for path in paths:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        header, data = (rows[0], rows[1:]) if rows else ([], [])
        for i, row in enumerate(data, start=2):
            if len(row) != len(header):
                print(f"{path}:{i}: {len(row)} fields, the header has {len(header)}", file=sys.stderr)
                status = 1
        pandas_columns = None
        if pandas is not None:
            pandas_columns = [str(c) for c in pandas.read_csv(path).columns]
            if pandas_columns != header:
                print(f"{path}: pandas reads columns {pandas_columns}, csv reads {header}", file=sys.stderr)
                status = 1
        print(json.dumps({"file": path, "columns": header, "rows": len(data), "pandas_columns": pandas_columns}))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
