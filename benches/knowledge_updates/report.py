#!/usr/bin/env python3
"""Markdown tables from score.py --out files: one row per run and column (mode or
mode+variant), then current_first / stale_only per update wording.

Usage: report.py results/baseline.json results/new-default.json …
"""
import json
import sys

WORDINGS = ["switch_to", "from_now_on", "moved_to", "no_longer", "instead_of",
            "update_colon", "lets_make_it", "changing_decision", "bump_to"]


def main():
    runs = [json.load(open(p)) for p in sys.argv[1:]]
    print("| run | column | cases | current_first | stale_only | current_found | neither | MRR | p50 ms | p99 ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        for col, s in r["summary"].items():
            print(f"| {r['label']} | {col} | {s['cases']} | {s['current_first']:.1f} % | {s['stale_only']:.1f} % | "
                  f"{s['current_found']:.1f} % | {s['neither']:.1f} % | {s['mrr']:.3f} | {s['p50_ms']} | {s['p99_ms']} |")
    print()
    cols = [(r["label"], col, r["cases"][col]) for r in runs for col in r["cases"]]
    print("current_first % / stale_only % per update wording (n cases):\n")
    print("| wording | n | " + " | ".join(f"{lab} {col}" for lab, col, _ in cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    for key in ("wording", "value_form", "update_mentions_old", "confirmed", "new_use"):
        values = WORDINGS if key == "wording" else sorted({str(x[key]) for _, _, rs in cols for x in rs})
        for v in values:
            cells, n = [], 0
            for _, _, rs in cols:
                sub = [x for x in rs if str(x[key]) == v]
                n = len(sub)
                if sub:
                    cf = 100 * sum(x["current_first"] for x in sub) / n
                    so = 100 * sum(x["stale_only"] for x in sub) / n
                    cells.append(f"{cf:.0f} / {so:.0f}")
                else:
                    cells.append("–")
            name = v if key == "wording" else f"{key}={v}"
            print(f"| {name} | {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
