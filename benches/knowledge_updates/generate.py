#!/usr/bin/env python3
"""Knowledge-update benchmark: generates long coding-team conversations in which a fact is
stated, used, and many turns or sessions later changed, worded differently each time.

Deterministic (seeded `random`), offline, standard library only. Writes

  events.jsonl   event v1 lines (schemas/event.v1.json), one project per case (ku-001 …);
                 every event carries metadata.case and metadata.role_in_case
                 (initial | use | update | filler); events that state a value also carry
                 metadata.states = stale | current (a turn of an update that names no
                 value, e.g. the complaint before "let's make it …", says none)
  queries.jsonl  one question per case: the `search` request fields (id, query,
                 project_id, token_budget, limit, now) plus the truth — stale_evidence
                 (the initial statement and the uses of the old value), current_evidence
                 (the update statement(s) and later uses of the new value), update_ids,
                 the update's wording type and how its value is written

Usage: generate.py [--cases 60] [--seed 20261126] [--out DIR]
"""
import argparse
import datetime as dt
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from subjects import KINDS  # noqa: E402

WORDINGS = [
    "switch_to", "from_now_on", "moved_to", "no_longer", "instead_of",
    "update_colon", "lets_make_it", "changing_decision", "bump_to",
]

# {s} subject, {S} capitalised, {new}/{old} values, {pain} the reason, {Pain} capitalised.
UPDATE_TEMPLATES = {
    "switch_to": [
        "We should switch {s} to {new}, {pain}.",
        "Switching {s} to {new}: {pain}.",
        "Ok, decided with the team: switch {s} over to {new}.",
    ],
    "from_now_on": [
        "From now on {s} is {new}. Reason: {pain}.",
        "From now on we go with {new} for {s}; {pain}.",
    ],
    "moved_to": [
        "We moved {s} to {new} this morning, {pain}.",
        "Heads up: {s} moved to {new} over the weekend because {pain}.",
    ],
    "no_longer": [
        "{S} is no longer {old}. It's {new} as of today, since {pain}.",
        "We no longer use {old} for {s}, it's {new} now.",
    ],
    "instead_of": [
        "Use {new} instead of {old} for {s} from here on, {pain}.",
        "Going with {new} instead of {old} for {s}.",
    ],
    "update_colon": [
        "Update: {s} is {new} now.",
        "Update: {s} changed to {new} ({pain}).",
    ],
    "lets_make_it": [
        "Let's make it {new}.",
        "Fine, let's make it {new} then.",
    ],
    "changing_decision": [
        "Changing the decision on {s}: {new}, not {old}. {Pain}.",
        "I'm changing the decision about {s}: we go with {new}.",
    ],
    "bump_to": [
        "Bump {s} to {new}, {pain}.",
        "Can you bump {s} to {new}? {Pain}.",
    ],
}

# The turn before "let's make it …": names the subject, states no value.
LETS_CONTEXT = [
    "{S} is hurting us: {pain}.",
    "{Pain}. I think it's {s} again.",
    "Can we revisit {s}? {Pain}.",
]

INITIAL_ACK = [
    "Noted. {S} is {v} in {file}.",
    "Ok, I put {v} in {file} and added a comment saying why.",
]

CONFIRM = [
    "Done: {file} now says {v}.",
    "Changed it in {file}: {v}.",
    "Ok, updated {file}. {S} is {v} everywhere now.",
]

# ------------------------------------------------------------------------------ filler

MODULES = ["billing", "orders", "search", "auth", "notifications", "reports", "inventory",
           "exports", "profiles", "onboarding", "invoices", "audit", "catalog", "shipping"]
FUNCS = ["parse_invoice", "apply_discount", "build_query", "send_digest", "resolve_tenant",
         "normalize_email", "load_fixtures", "render_pdf", "sync_inventory", "compute_totals",
         "refresh_index", "merge_accounts", "validate_address", "format_currency",
         "paginate", "serialize_order", "diff_snapshots", "expire_carts"]
FILES = ["models", "views", "service", "handlers", "utils", "serializers", "tasks", "client",
         "schema", "repository"]
ERRORS = [
    "KeyError: 'tenant_id'",
    "TypeError: 'NoneType' object is not subscriptable",
    "IntegrityError: duplicate key value violates unique constraint \"users_email_key\"",
    "AssertionError: expected 3 items, got 2",
    "ValueError: invalid literal for int() with base 10: ''",
    "ZeroDivisionError: division by zero",
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 14",
    "AttributeError: 'Order' object has no attribute 'currency_code'",
    "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
]
PEOPLE = ["Lena", "Omar", "Jonas", "Sofia", "Ravi", "Hannah", "Diego", "Mei", "Kofi", "Elif",
          "Noah", "Ingrid"]
ENDPOINTS = ["/api/orders/{id}", "/api/invoices/export", "/api/search", "/api/users/me",
             "/api/carts/{id}/checkout", "/api/reports/monthly", "/api/catalog/items",
             "/api/shipping/quote"]
CONDITIONS = ["the cart is empty", "the user has no billing address",
              "the search term has an umlaut", "two requests arrive at the same time",
              "the tenant was created before the migration", "the CSV has a BOM",
              "the discount code is expired", "the item was soft-deleted"]
ASSUMPTIONS = ["the list is never empty", "every order has a currency",
               "the tenant id is always in the header", "dates are naive UTC",
               "the email is already lower-case", "the upstream always returns JSON"]
REVIEW_COMMENTS = [
    "the new query misses an index on (tenant_id, created_at)",
    "the error is swallowed in the except branch",
    "the test only covers the happy path",
    "the migration isn't reversible",
    "there's a leftover print statement",
    "the function name says get but it writes",
    "the retry loop has no jitter",
    "the enum value is hard-coded in two places",
    "naming: `data2` could be `pending_rows`",
    "the docstring is out of date",
]
COMMIT_MSGS = [
    "fix: handle empty carts in checkout", "chore: update lockfile",
    "feat(search): highlight matched terms", "refactor: split invoice service",
    "test: regression for tenant header", "docs: explain export columns",
    "fix(auth): lower-case emails before lookup", "perf: batch inventory sync",
    "ci: cache pip downloads", "fix: currency rounding in reports",
    "feat(shipping): quote endpoint", "chore: remove dead feature code",
]
LINT_MSGS = ["E501 line too long", "F401 'os' imported but unused",
             "B006 do not use mutable data structures for argument defaults",
             "E711 comparison to None should be 'if cond is None:'",
             "W605 invalid escape sequence '\\d'"]
TOPICS = ["local setup", "running the e2e tests", "seeding the dev database",
          "the export format", "how tenants are resolved", "adding a new endpoint"]
SYMPTOMS = ["checkout is slow", "some invoices show the wrong total",
            "search returns nothing for quoted terms", "password emails arrive twice",
            "the export button spins forever", "CPU on the workers is pegged"]
CAUSES = ["an N+1 query in the order serializer", "a missing index after yesterday's migration",
          "a retry storm from the mobile client", "the new cache key ignoring the tenant",
          "a regex that backtracks on long inputs"]
QUESTIONS = [
    ("Why does {func} take a session argument if it never writes?",
     "It used to write audit rows; that moved to a signal handler and nobody removed the parameter. Safe to drop."),
    ("What's the difference between {func} and the old {func}_legacy?",
     "The legacy one reads from the replica and skips soft-deleted rows differently. Only the admin export still calls it."),
    ("Is {mod}/{file}.py covered by tests at all?",
     "Partly: the happy path is, the error branches aren't. I can add two cases for the validation errors."),
    ("Where do we set the tenant for background jobs?",
     "The task decorator copies it from the request context into the job headers, and the worker restores it before the task runs."),
    ("Can {func} be called from a migration safely?",
     "Not really, it imports the live models. Copy the logic into the migration or use the historical models."),
    ("Do we still need the {mod} compatibility shim?",
     "The last caller was removed in the spring. I'll grep once more and delete it if nothing turns up."),
]
TODOS = ["remove the {mod} compatibility shim", "add a test for {func} with unicode input",
         "ask {person} about the export columns", "document the tenant header",
         "split {mod}/{file}.py before it grows further", "check the flaky test in {mod}"]
CHAT = ["Thanks, that worked.", "Ok, merging.", "Let me check with {person} first.",
        "Nice, that was quick.", "Hmm, let me try that locally.", "Good catch.",
        "I'll pick this up after lunch.", "Pushed, CI is running."]
PKGS = [("pydantic", "2.6.1", "2.7.0"), ("axios", "1.6.7", "1.6.8"), ("boto3", "1.34.40", "1.34.52"),
        ("eslint", "8.56.0", "8.57.0"), ("sqlalchemy", "2.0.25", "2.0.27"), ("react", "18.2.0", "18.3.1")]


def _pick(rng, xs):
    return rng.choice(xs)


def _slots(rng):
    mod, func, fil = _pick(rng, MODULES), _pick(rng, FUNCS), _pick(rng, FILES)
    return dict(mod=mod, func=func, file=fil, person=_pick(rng, PEOPLE),
                n=rng.randint(101, 989), line=rng.randint(12, 480), col=rng.randint(1, 79),
                t=f"{rng.uniform(0.8, 48.0):.2f}")


CODE_LINES = [
    "def {func}(self, {arg}, *, tenant=None):",
    "    \"\"\"{doc}\"\"\"",
    "    if not {arg}:",
    "        return []",
    "    rows = self.repo.fetch_{mod}(tenant_id=tenant.id if tenant else None)",
    "    result = [self._convert(row) for row in rows if row.deleted_at is None]",
    "    log.debug(\"{func}: %d rows for %s\", len(result), tenant)",
    "    for item in result:",
    "        item.total = round(item.net + item.tax, 2)",
    "    self.metrics.incr(\"{mod}.{func}.calls\")",
    "    return sorted(result, key=lambda r: (r.created_at, r.id))",
]
DOCS = ["Return the visible rows for the current tenant.", "Convert raw rows into API objects.",
        "Compute totals, skipping soft-deleted rows.", "Load and normalise the records for export."]
LOG_MSGS = ["request finished status=500 path={ep} duration_ms={ms}",
            "slow query: SELECT * FROM {mod} WHERE tenant_id = $1 ({ms} ms)",
            "retrying upstream call attempt={k} error=ConnectionResetError",
            "worker heartbeat ok queue_depth={n}",
            "cache miss key={mod}:{n} ttl_left=0",
            "GET {ep} 200 {ms}ms"]


def _traceback(rng, s, err):
    name = f"test_{s['func']}_{_pick(rng, ['edge_case', 'empty_input', 'unicode', 'concurrent', 'legacy_tenant'])}"
    passed = rng.randint(11, 87)
    return (f"============================= test session starts ==============================\n"
            f"collected {passed + 1} items\n\n"
            f"tests/{s['mod']}/test_{s['file']}.py {'.' * rng.randint(3, 12)}F{'.' * rng.randint(0, 8)}\n"
            f"=================================== FAILURES ===================================\n"
            f"____________________________ {name} ____________________________\n\n"
            f"    def {name}(client, tenant):\n"
            f"        payload = make_payload(tenant)\n"
            f">       resp = {s['func']}(payload, tenant=tenant)\n\n"
            f"tests/{s['mod']}/test_{s['file']}.py:{s['line']}: \n"
            f"src/{s['mod']}/{s['file']}.py:{s['line'] + rng.randint(3, 90)}: in {s['func']}\n"
            f"E   {err}\n"
            f"=========================== short test summary info ============================\n"
            f"FAILED tests/{s['mod']}/test_{s['file']}.py::{name} - {err.split(':')[0]}\n"
            f"1 failed, {passed} passed in {s['t']}s")


def _code(rng, s):
    arg = _pick(rng, ["items", "rows", "payload", "ids"])
    lines = [ln.format(func=s["func"], mod=s["mod"], arg=arg, doc=_pick(rng, DOCS)) for ln in CODE_LINES]
    start = rng.randint(20, 300)
    keep = lines[:rng.randint(7, len(lines))]
    return "\n".join(f"{start + i:>4}  {ln}" for i, ln in enumerate(keep))


def _diff(rng, s):
    a, b = rng.randint(1, 40), rng.randint(1, 25)
    return (f" src/{s['mod']}/{s['file']}.py | {a + b} {'+' * min(a, 20)}{'-' * min(b, 10)}\n"
            f" tests/{s['mod']}/test_{s['file']}.py | {rng.randint(5, 60)} {'+' * 12}\n"
            f" 2 files changed, {a + 14} insertions(+), {b} deletions(-)\n"
            f"diff --git a/src/{s['mod']}/{s['file']}.py b/src/{s['mod']}/{s['file']}.py\n"
            f"@@ -{s['line']},7 +{s['line']},9 @@ def {s['func']}(self, rows, *, tenant=None):\n"
            f"     if not rows:\n"
            f"         return []\n"
            f"-    result = [self._convert(r) for r in rows]\n"
            f"+    result = [self._convert(r) for r in rows if r.deleted_at is None]\n"
            f"+    if tenant is None:\n"
            f"+        raise MissingTenant(\"{s['func']} needs a tenant\")\n"
            f"     for item in result:\n"
            f"         item.total = round(item.net + item.tax, 2)")


def _logs(rng, s):
    ep = _pick(rng, ENDPOINTS)
    out = []
    for _ in range(rng.randint(4, 8)):
        msg = _pick(rng, LOG_MSGS).format(ep=ep, mod=s["mod"], ms=rng.randint(40, 9000),
                                          k=rng.randint(1, 4), n=rng.randint(100, 99999))
        out.append(f"{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}.{rng.randint(100, 999)} "
                   f"{_pick(rng, ['INFO', 'WARN', 'ERROR'])} {s['mod']}-api-{rng.getrandbits(20):05x} {msg}")
    return "\n".join(out)


def filler_unit(rng):
    """A few turns about something else: bugs, reviews, tool output, questions, notes."""
    s = _slots(rng)
    k = rng.randrange(18)
    if k in (0, 15):
        ep = _pick(rng, ENDPOINTS)
        err = _pick(rng, ERRORS)
        return [("user_message", f"{ep} returns a 500 when {_pick(rng, CONDITIONS)}. Can you take a look? "
                                 f"{s['person']} saw it in the logs this morning."),
                ("tool_call", f"bash: pytest tests/{s['mod']}/test_{s['file']}.py -x -q"),
                ("tool_result", _traceback(rng, s, err)),
                ("assistant_message", f"Found it: {s['func']} in src/{s['mod']}/{s['file']}.py assumes "
                                      f"{_pick(rng, ASSUMPTIONS)}, and the failing path breaks that. I added a guard "
                                      f"at the top of the function and a regression test that reproduces the 500; "
                                      f"the other callers already handle the case, so nothing else changes.")]
    if k == 1:
        c1, c2 = rng.sample(REVIEW_COMMENTS, 2)
        return [("user_message", f"Can you review PR #{s['n']}? {s['person']} touched {s['mod']}/{s['file']}.py "
                                 f"and I'd like a second pair of eyes before it goes in."),
                ("tool_call", f"gh pr diff {s['n']}"),
                ("tool_result", _diff(rng, s)),
                ("assistant_message", f"Left {rng.randint(2, 6)} comments. The main ones: {c1}, and {c2}. "
                                      f"Otherwise it looks good; the change itself is small and the test covers it.")]
    if k == 2:
        lines = "\n".join(f"{rng.getrandbits(28):07x} {m}" for m in rng.sample(COMMIT_MSGS, rng.randint(5, 8)))
        return [("tool_call", "bash: git log --oneline -8"), ("tool_result", lines)]
    if k == 3:
        hits = "\n".join(f"src/{_pick(rng, MODULES)}/{_pick(rng, FILES)}.py:{rng.randint(5, 400)}:    "
                         f"{'return ' if rng.random() < 0.5 else ''}{s['func']}(" + ("ctx" if rng.random() < 0.5 else "row") + ")"
                         for _ in range(rng.randint(3, 7)))
        return [("tool_call", f"bash: rg -n '{s['func']}' src/"), ("tool_result", hits)]
    if k == 4:
        q, a = _pick(rng, QUESTIONS)
        return [("user_message", q.format(**s)), ("assistant_message", a.format(**s))]
    if k == 5:
        return [("note", "TODO: " + _pick(rng, TODOS).format(**s))]
    if k == 6:
        return [("tool_result", f"CI: lint failed\nsrc/{s['mod']}/{s['file']}.py:{s['line']}:{s['col']}: {_pick(rng, LINT_MSGS)}"),
                ("assistant_message", "Fixed the lint error and pushed again.")]
    if k == 7:
        a, b = rng.sample(FUNCS, 2)
        return [("user_message", f"Let's split {s['mod']}/{s['file']}.py, it's getting long."),
                ("tool_call", f"read_file: src/{s['mod']}/{s['file']}.py"),
                ("tool_result", _code(rng, s)),
                ("assistant_message", f"Moved {a} and {b} into {s['mod']}/helpers.py; imports updated, tests green.")]
    if k == 8:
        pkg, a, b = _pick(rng, PKGS)
        return [("assistant_message", f"Dependabot opened PR #{s['n']} for {pkg} {a} → {b}; the changelog lists only bug fixes, so I approved it.")]
    if k == 9:
        return [("tool_call", "bash: make test"),
                ("tool_result", f"{'.' * rng.randint(40, 120)}\n{rng.randint(120, 900)} passed, {rng.randint(1, 9)} skipped in {s['t']}s")]
    if k == 10:
        return [("user_message", _pick(rng, CHAT).format(**s))]
    if k == 11:
        hdr = _pick(rng, ["X-Tenant-Id", "If-None-Match", "Idempotency-Key", "Accept-Language"])
        return [("user_message", f"What does the {s['mod']} middleware do with {hdr} headers?"),
                ("tool_call", f"read_file: src/{s['mod']}/middleware.py"),
                ("tool_result", _code(rng, s)),
                ("assistant_message", f"It reads {hdr} early, validates it, and stores it on the request; "
                                      f"handlers further down only see the parsed value. A malformed header is a 400 "
                                      f"before any handler runs, which is why the logs show no stack trace for it.")]
    if k == 12:
        return [("tool_call", f"bash: python -m cProfile -s cumtime scripts/{s['func']}_bench.py | head -8"),
                ("tool_result", "   ncalls  tottime  cumtime filename:lineno(function)\n" + "\n".join(
                    f"     {rng.randint(1000, 90000)}    {rng.uniform(0.1, 3):.3f}    {rng.uniform(3, 9):.3f} "
                    f"{_pick(rng, FILES)}.py:{rng.randint(10, 500)}({_pick(rng, FUNCS)})" for _ in range(rng.randint(4, 7)))),
                ("assistant_message", f"Most of the time is in {s['func']}: it converts every row twice. "
                                      f"Caching the converted rows per request should halve it.")]
    if k == 13:
        t = _pick(rng, TOPICS)
        return [("user_message", f"Can you update the README section on {t}?"),
                ("assistant_message", f"Updated the README: {t} now has step-by-step commands, the environment "
                                      f"variables it needs, and a troubleshooting note for the error {s['person']} hit last week.")]
    if k == 14:
        return [("user_message", f"{s['person']} says {_pick(rng, SYMPTOMS)} on prod since this morning."),
                ("tool_call", f"bash: kubectl logs deploy/{s['mod']}-api --since=1h | tail -8"),
                ("tool_result", _logs(rng, s)),
                ("assistant_message", f"Looks like {_pick(rng, CAUSES)}. I rolled back the {s['mod']} service to the "
                                      f"previous image; error rates are dropping. I'll write up the timeline for the incident doc.")]
    if k == 16:
        return [("tool_call", f"read_file: src/{s['mod']}/{s['file']}.py"), ("tool_result", _code(rng, s))]
    return [("tool_call", f"bash: git diff --stat HEAD~1 && git diff HEAD~1 -- src/{s['mod']}"),
            ("tool_result", _diff(rng, s)),
            ("assistant_message", f"That's the whole change: {s['func']} now skips soft-deleted rows and refuses to run without a tenant.")]


NEAR_MISS = [
    ("Where is {s} configured again?", "In {file}; it's near the top, with a comment."),
    ("Who decided on {s}, and is it written down anywhere?", "It came out of a team discussion; the reasoning is in {file} next to the setting."),
]


# ------------------------------------------------------------------------------ cases

def _cap(x):
    return x[:1].upper() + x[1:]


def _value_regex(inst):
    forms = inst["old"] + inst["new"]
    return re.compile("|".join(r"(?<![\w.])" + re.escape(f) + r"(?![\w])" for f in forms), re.I)


def _fmt(template, **kw):
    s = kw.get("s", "")
    pain = kw.get("pain", "")
    return template.format(S=_cap(s), Pain=_cap(pain), **kw)


def instances():
    out = []
    for k in KINDS:
        for inst in k["instances"]:
            merged = dict(kind=k["kind"], init=k["init"], use=k["use"], deny=set(k.get("deny", ())))
            merged.update({key: val for key, val in inst.items() if key != "deny"})
            merged["deny"] |= set(inst.get("deny", ()))
            merged.setdefault("s2", merged["s"])
            out.append(merged)
    return out


def make_case(rng, idx, inst, wording):
    project = f"ku-{idx:03d}"
    vre = _value_regex(inst)
    n_sess = rng.randint(4, 8)
    upd_sess = rng.randint(max(2, n_sess // 2), n_sess - 1)
    base = dict(s=inst["s"], s2=inst["s2"], file=inst["file"], pain=inst["pain"])

    # --- the case's own blocks, per session, in order
    blocks = {i: [] for i in range(n_sess)}
    v_old0 = inst["old"][0]
    init_form = 0
    initial = [("user_message" if rng.random() < 0.7 else "assistant_message",
                _fmt(_pick(rng, inst["init"]), v=v_old0, v0=v_old0, **base), "initial", "stale")]
    if rng.random() < 0.5:
        initial.append(("assistant_message" if initial[0][0] == "user_message" else "user_message",
                        _fmt(_pick(rng, INITIAL_ACK), v=_pick(rng, inst["old"]), v0=v_old0, **base),
                        "initial", "stale"))
    blocks[0].append(initial)

    use_templates = list(inst["use"])
    rng.shuffle(use_templates)
    n_uses = min(rng.randint(2, 4), len(use_templates) - 1)
    use_sessions = sorted(rng.randrange(0, upd_sess) for _ in range(n_uses))
    for i, sess in enumerate(use_sessions):
        text = _fmt(use_templates[i], v=_pick(rng, inst["old"]), v0=v_old0, **base)
        blocks[sess].append([("assistant_message" if rng.random() < 0.5 else "user_message", text, "use", "stale")])

    # the update
    new_idx = 0 if rng.random() < 0.5 else rng.randrange(len(inst["new"]))
    v_new = inst["new"][new_idx]
    v_old_in_update = _pick(rng, inst["old"])
    upd_kw = dict(base, new=v_new, old=v_old_in_update)
    update = []
    upd_template = _pick(rng, UPDATE_TEMPLATES[wording])
    mentions_old = "{old}" in upd_template
    if wording == "lets_make_it":
        update.append(("user_message", _fmt(_pick(rng, LETS_CONTEXT), **upd_kw), "update", "none"))
        update.append(("user_message", _fmt(upd_template, **upd_kw), "update", "current"))
    else:
        kind = "note" if wording == "update_colon" and rng.random() < 0.5 else (
            "user_message" if rng.random() < 0.8 else "assistant_message")
        update.append((kind, _fmt(upd_template, **upd_kw), "update", "current"))
    confirmed = rng.random() < 0.6
    if confirmed:
        update.append(("assistant_message",
                       _fmt(_pick(rng, CONFIRM), v=_pick(rng, inst["new"]), v0=inst["new"][0], **base),
                       "update", "current"))
    blocks[upd_sess].append(update)

    new_use = rng.random() < 0.5
    if new_use:
        sess = rng.randint(upd_sess, n_sess - 1)
        text = _fmt(use_templates[n_uses], v=_pick(rng, inst["new"]), v0=inst["new"][0], **base)
        blocks[sess].append([("assistant_message" if rng.random() < 0.5 else "user_message", text, "use", "current")])

    near_miss = rng.random() < 0.7
    if near_miss:
        q, a = _pick(rng, NEAR_MISS)
        sess = rng.randrange(n_sess)
        pos = rng.randint(0, len(blocks[sess]))
        blocks[sess].insert(pos, [("user_message", _fmt(q, **base), "filler", "near_miss"),
                                  ("assistant_message", _fmt(a, **base), "filler", "near_miss")])

    # --- sessions: filler units with the case's blocks at random places, order kept
    events = []
    day = dt.datetime(2026, 2, 2, tzinfo=dt.timezone.utc) + dt.timedelta(days=rng.randint(0, 200))
    repo = _pick(rng, ["api", "web", "platform", "backend", "shop", "core"])
    counter = 0

    def emit(ts, kind, text, role, states=None, sid=None, extra=None):
        nonlocal counter
        counter += 1
        meta = {"case": project, "role_in_case": role}
        if states and states not in ("near_miss",):
            meta["states"] = states
        if states == "near_miss":
            meta["near_miss"] = "1"
        if extra:
            meta.update(extra)
        ev = {"event_id": f"{project}-{counter:04d}", "session_id": sid, "project_id": project,
              "agent_id": "claude-code", "timestamp": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
              "kind": kind, "metadata": meta}
        if text is not None:
            ev["text"] = text
        events.append(ev)
        return ev

    for sess in range(n_sess):
        if sess:
            day += dt.timedelta(days=rng.randint(2, 9))
        ts = day.replace(hour=rng.randint(8, 15), minute=rng.randint(0, 59), second=rng.randint(0, 59))
        sid = f"{project}-s{sess + 1}"
        branch = f"feat/{_pick(rng, MODULES)}-{rng.randint(100, 999)}"
        emit(ts, "session_start", f"Session started in /home/dev/{repo} on branch {branch}.", "filler",
             sid=sid, extra={"git_branch": branch})
        fillers = []
        for _ in range(rng.randint(8, 16)):
            for _attempt in range(300):
                unit = filler_unit(rng)
                if not any(vre.search(t) for _, t in unit):
                    break
            else:
                raise RuntimeError(f"no filler free of {inst['s']}'s values")
            fillers.append([(k, t, "filler", None) for k, t in unit])
        own = blocks[sess]
        slots = sorted(rng.randint(0, len(fillers)) for _ in own)
        seq = []
        fi = 0
        for block, slot in zip(own, slots):
            while fi < slot:
                seq.append(fillers[fi])
                fi += 1
            seq.append(block)
        seq.extend(fillers[fi:])
        for block in seq:
            for kind, text, role, states in block:
                ts += dt.timedelta(seconds=rng.randint(1, 6) if kind == "tool_result" else rng.randint(20, 240))
                extra = {"wording": wording} if role == "update" else None
                emit(ts, kind, text, role, states, sid=sid, extra=extra)
        ts += dt.timedelta(seconds=rng.randint(30, 300))
        emit(ts, "session_end", None, "filler", sid=sid)

    stale = [e["event_id"] for e in events if e["metadata"].get("states") == "stale"]
    current = [e["event_id"] for e in events if e["metadata"].get("states") == "current"]
    update_ids = [e["event_id"] for e in events if e["metadata"]["role_in_case"] == "update"
                  and e["metadata"].get("states") == "current"]
    pos = {e["event_id"]: i for i, e in enumerate(events)}
    first_update = min(pos[i] for i in update_ids)
    last_stale = max(pos[i] for i in stale)
    now = dt.datetime.strptime(events[-1]["timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=dt.timezone.utc) + dt.timedelta(minutes=30)
    query = {
        "id": project, "query": _pick(rng, inst["q"]), "project_id": project,
        "token_budget": 2000, "limit": 50, "now": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        # truth (not sent to the daemon)
        "kind": inst["kind"], "subject": inst["s"], "old": inst["old"][0], "new": inst["new"][0],
        "wording": wording, "value_form": "same" if new_idx == init_form else "different",
        "update_value": v_new, "update_mentions_old": mentions_old,
        "confirmed": confirmed, "new_use": new_use, "near_miss": near_miss,
        "sessions": n_sess, "update_session": upd_sess + 1, "events": len(events),
        "turns_between": first_update - last_stale,
        "stale_evidence": stale, "current_evidence": current, "update_ids": update_ids,
    }
    return events, query


def assign_wordings(rng, insts, n):
    counts = {w: 0 for w in WORDINGS}
    out = []
    for i in range(n):
        inst = insts[i % len(insts)]
        allowed = [w for w in WORDINGS if w not in inst["deny"]]
        low = min(counts[w] for w in allowed)
        w = rng.choice([w for w in allowed if counts[w] == low])
        counts[w] += 1
        out.append(w)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    insts = instances()
    rng.shuffle(insts)
    wordings = assign_wordings(rng, insts, a.cases)
    os.makedirs(a.out, exist_ok=True)
    n_events = 0
    with open(os.path.join(a.out, "events.jsonl"), "w") as fe, open(os.path.join(a.out, "queries.jsonl"), "w") as fq:
        for i in range(a.cases):
            events, query = make_case(rng, i + 1, insts[i % len(insts)], wordings[i])
            for e in events:
                fe.write(json.dumps(e, ensure_ascii=False) + "\n")
            fq.write(json.dumps(query, ensure_ascii=False) + "\n")
            n_events += len(events)
    kinds = {insts[i % len(insts)]["kind"] for i in range(a.cases)}
    print(f"wrote {a.cases} cases ({len(kinds)} kinds of subject), {n_events} events to {a.out}")


if __name__ == "__main__":
    main()
