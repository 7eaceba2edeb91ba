#!/usr/bin/env python3
"""Scores the daemon's `search` on the knowledge-update cases (generate.py).

For every case: a fresh temporary data dir, `BINARY --data-dir D ingest --file events.jsonl
--wait` with the case's events, then `BINARY --data-dir D search --batch queries.jsonl --json
--mode M` for each mode asked for (one ingest serves every mode). The response's evidence
is read in order (results in order, each result's evidence in order, each event once) and
charged ceil(len(text) / 4) tokens (at least 1; crates/text/src/tokens.rs), stopping at the
first event that does not fit the budget.

Per case:
  current_first   the first evidence event that states either value states the current one
                  (whole response, budget or not)
  stale_only      within the budget: some stale evidence, no current evidence
  current_found   within the budget: some current evidence
  RR              1 / position of the first current evidence event in the evidence order
                  (0 when absent); MRR is its mean

Usage:
  score.py --binary PATH [--mode hybrid] [--mode keyword] [--budget 2000]
           [--env KEY=VALUE ...] [--search-variant NAME:KEY=VALUE ...]
           [--label NAME] [--out results.json] [--responses DIR]

--env applies to ingest and search; --search-variant searches the same ingested data dir
again with more environment (query-time settings only), one column per mode and variant.
"""
import argparse
import collections
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REQUEST_KEYS = ("id", "query", "project_id", "token_budget", "limit", "now")
BREAKDOWNS = (
    ("wording", "update wording"),
    ("value_form", "new value written in the initial statement's style"),
    ("update_mentions_old", "update statement also names the old value"),
    ("confirmed", "an assistant turn confirms the update"),
    ("new_use", "the new value is used again after the update"),
)


def cost(text):
    return max(1, math.ceil(len(text or "") / 4))


def tools_env():
    """The exports of .tools/env (scripts/setup.sh writes it) that the environment lacks."""
    path = os.path.join(REPO, ".tools", "env")
    out = {}
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line.startswith("export ") and "=" in line:
                k, v = line[len("export "):].split("=", 1)
                if k not in os.environ:
                    out[k] = v.strip().strip('"').strip("'")
    return out


def load(data_dir):
    events = collections.defaultdict(list)
    for line in open(os.path.join(data_dir, "events.jsonl")):
        e = json.loads(line)
        events[e["project_id"]].append(e)
    queries = [json.loads(line) for line in open(os.path.join(data_dir, "queries.jsonl"))]
    return events, queries


def score_response(resp, q, texts, budget):
    stale, current = set(q["stale_evidence"]), set(q["current_evidence"])
    order, seen = [], set()
    for res in resp.get("results", []):
        for ev in res.get("evidence", []):
            eid = ev.get("event_id")
            if eid and eid not in seen:
                seen.add(eid)
                order.append(eid)
    first = next((("current" if e in current else "stale") for e in order if e in stale or e in current), None)
    rank_cur = next((i + 1 for i, e in enumerate(order) if e in current), None)
    rank_stale = next((i + 1 for i, e in enumerate(order) if e in stale), None)
    used, fits = 0, []
    for e in order:
        c = cost(texts.get(e, ""))
        if used + c > budget:
            break
        used += c
        fits.append(e)
    in_budget = set(fits)
    has_cur, has_stale = bool(in_budget & current), bool(in_budget & stale)
    return {
        "id": q["id"], "first": first, "current_first": first == "current",
        "stale_only": has_stale and not has_cur, "current_found": has_cur, "stale_found": has_stale,
        "neither": not has_cur and not has_stale,
        "rr": 1.0 / rank_cur if rank_cur else 0.0, "rank_current": rank_cur, "rank_stale": rank_stale,
        "evidence_in_budget": len(fits), "tokens": used, "took_ms": resp.get("took_ms"),
        "tier": resp.get("tier"), "fallback_reason": resp.get("fallback_reason"),
        "error": resp.get("error"),
    }


def run(binary, modes, budget, env, data_dir, cases, responses_dir, variants=()):
    """Rows per column; a column is a mode, or `mode+variant` for a search-only variant."""
    events, queries = load(data_dir)
    if cases:
        queries = queries[:cases]
    columns = [(m, None, {}) for m in modes] + [(m, name, venv) for name, venv in variants for m in modes]
    names = [m if v is None else f"{m}+{v}" for m, v, _ in columns]
    rows = {n: [] for n in names}
    raw = {n: [] for n in names}
    t_start = time.time()
    for n, q in enumerate(queries, 1):
        evs = events[q["project_id"]]
        texts = {e["event_id"]: e.get("text", "") for e in evs}
        with tempfile.TemporaryDirectory(prefix="ku-") as tmp:
            evf, qf = os.path.join(tmp, "events.jsonl"), os.path.join(tmp, "queries.jsonl")
            with open(evf, "w") as f:
                for e in evs:
                    f.write(json.dumps(e, ensure_ascii=False) + "\n")
            with open(qf, "w") as f:
                req = {k: q[k] for k in REQUEST_KEYS}
                req["token_budget"] = budget
                f.write(json.dumps(req, ensure_ascii=False) + "\n")
            dd = os.path.join(tmp, "data")
            t0 = time.time()
            subprocess.run([binary, "--data-dir", dd, "ingest", "--file", evf, "--wait"], check=True,
                           stdout=subprocess.DEVNULL, env=env)
            t_ingest = time.time() - t0
            for name, (m, _, venv) in zip(names, columns):
                out = subprocess.run([binary, "--data-dir", dd, "search", "--batch", qf, "--json", "--mode", m],
                                     check=True, capture_output=True, text=True, env={**env, **venv}).stdout
                resp = next((json.loads(line) for line in out.splitlines() if line.strip()), {})
                r = score_response(resp, q, texts, budget)
                for key, _ in BREAKDOWNS:
                    r[key] = q[key]
                r["kind"] = q["kind"]
                rows[name].append(r)
                raw[name].append(resp)
        print(f"  [{n}/{len(queries)}] {q['id']} {len(evs)} events, ingest {t_ingest:.1f}s: "
              + ", ".join(f"{c}={rows[c][-1]['first'] or '-'}" for c in names), file=sys.stderr, flush=True)
    print(f"  {len(queries)} cases in {time.time() - t_start:.0f}s", file=sys.stderr)
    if responses_dir:
        os.makedirs(responses_dir, exist_ok=True)
        for m in names:
            with open(os.path.join(responses_dir, f"{m}.jsonl"), "w") as f:
                for resp in raw[m]:
                    f.write(json.dumps(resp, ensure_ascii=False) + "\n")
    return rows


def pct(xs):
    return 100.0 * sum(xs) / len(xs) if xs else float("nan")


def summary(rs):
    lat = sorted(r["took_ms"] for r in rs if r["took_ms"] is not None)
    return {
        "cases": len(rs),
        "current_first": pct([r["current_first"] for r in rs]),
        "stale_only": pct([r["stale_only"] for r in rs]),
        "current_found": pct([r["current_found"] for r in rs]),
        "neither": pct([r["neither"] for r in rs]),
        "mrr": statistics.mean(r["rr"] for r in rs) if rs else float("nan"),
        "p50_ms": lat[len(lat) // 2] if lat else None,
        "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
        "tiers": dict(collections.Counter(r["tier"] or ("error" if r["error"] else "?") for r in rs)),
    }


def print_tables(label, rows, budget):
    print(f"\n== {label}   (budget {budget} tokens)")
    print(f"{'column':<16} {'cases':>5} {'current_first':>13} {'stale_only':>10} {'current_found':>13} "
          f"{'neither':>7} {'MRR':>6} {'p50 ms':>6} {'p99 ms':>6}  tiers")
    for m, rs in rows.items():
        s = summary(rs)
        print(f"{m:<16} {s['cases']:>5} {s['current_first']:>12.1f}% {s['stale_only']:>9.1f}% "
              f"{s['current_found']:>12.1f}% {s['neither']:>6.1f}% {s['mrr']:>6.3f} {s['p50_ms']!s:>6} "
              f"{s['p99_ms']!s:>6}  {s['tiers']}")
    for key, title in BREAKDOWNS:
        print(f"\n  by {key} ({title}): current_first% / stale_only% / current_found% / MRR")
        values = sorted({str(r[key]) for rs in rows.values() for r in rs})
        print(f"  {'':<18} {'n':>3}  " + "  ".join(f"{m:^26}" for m in rows))
        for v in values:
            cells = []
            n = 0
            for rs in rows.values():
                sub = [r for r in rs if str(r[key]) == v]
                n = len(sub)
                s = summary(sub)
                cells.append(f"{s['current_first']:5.0f} / {s['stale_only']:4.0f} / {s['current_found']:4.0f} / {s['mrr']:.2f}")
            print(f"  {v:<18} {n:>3}  " + "  ".join(f"{c:^26}" for c in cells))


def main():
    ap = argparse.ArgumentParser(description="Knowledge updates: does search rank the current value above the stale one?")
    ap.add_argument("--binary", required=True)
    ap.add_argument("--mode", action="append", help="search mode (repeat, or comma-separate); default hybrid")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment for the binary (repeat)")
    ap.add_argument("--search-variant", action="append", default=[], metavar="NAME:KEY=VALUE[,KEY=VALUE]",
                    help="also search the same data dir with this extra environment (search call only, not "
                         "ingest: for query-time settings such as AGENT_MEMORY_TELEPORT__FUSION); reported as "
                         "column MODE+NAME")
    ap.add_argument("--data", default=os.path.join(HERE, "data"), help="generate.py's output dir")
    ap.add_argument("--cases", type=int, help="only the first N cases")
    ap.add_argument("--label", help="name of this run in the output")
    ap.add_argument("--out", help="write the summary and per-case rows as JSON here")
    ap.add_argument("--responses", help="write the raw search responses here, one file per mode")
    a = ap.parse_args()
    modes = [m for arg in (a.mode or ["hybrid"]) for m in arg.split(",") if m]
    if not os.path.exists(os.path.join(a.data, "queries.jsonl")):
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--out", a.data], check=True)
    env = dict(os.environ)
    added = tools_env()
    if added:
        print(f"  from .tools/env: {', '.join(sorted(added))}", file=sys.stderr)
    env.update(added)
    extra = {}
    for kv in a.env:
        k, _, v = kv.partition("=")
        extra[k] = v
    env.update(extra)
    label = a.label or " ".join([a.binary] + [f"{k}={v}" for k, v in extra.items()])
    variants = []
    for spec in a.search_variant:
        name, _, kvs = spec.partition(":")
        variants.append((name, dict(kv.partition("=")[::2] for kv in kvs.split(",") if kv)))
    rows = run(a.binary, modes, a.budget, env, a.data, a.cases, a.responses, variants)
    print_tables(label, rows, a.budget)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump({"label": label, "binary": a.binary, "env": extra, "budget": a.budget,
                   "search_variants": {n: v for n, v in variants},
                       "summary": {m: summary(rs) for m, rs in rows.items()}, "cases": rows}, f, indent=1)


if __name__ == "__main__":
    main()
