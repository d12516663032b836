#!/usr/bin/env python3
"""Print the benchmark results as one table.

Reads "ROW|figure|value|floor|ratio|target|verdict" lines (from bench_inproc and daemon.py)
on stdin, ignores anything else, and prints them aligned, or as a Markdown table with
--markdown (for bench/README.md). Rows are sorted by figure number, keeping their order
within a figure. "NOTE|text" lines (a figure's one-line reading) follow the table.
"""
import sys

HEAD = ("figure", "value", "floor", "ratio", "target", "met")


def main():
    rows, notes = [], []
    for line in sys.stdin:
        parts = line.rstrip("\n").split("|")
        if parts[0] == "ROW" and len(parts) == 7:
            rows.append(tuple(parts[1:]))
        elif parts[0] == "NOTE" and len(parts) > 1:
            notes.append("|".join(parts[1:]))
    rows.sort(key=lambda r: r[0].split(".")[0] if r[0][:1].isdigit() else "9")
    if "--markdown" in sys.argv[1:]:
        print("| " + " | ".join(HEAD) + " |")
        print("|" + "|".join("---" for _ in HEAD) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(x) for x in col) for col in zip(HEAD, *rows)]
        for r in [HEAD, tuple("-" * w for w in widths)] + rows:
            print("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip())
    for n in notes:
        print("\n" + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
