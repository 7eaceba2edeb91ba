#!/usr/bin/env python3
"""Held-out knowledge-update cases, written independently of generate.py / subjects.py.

A team fact is stated once in a long coding-agent conversation, used with its old value,
then changed sessions later; the question asks for the fact without naming either value.
Output has the shape score.py reads (events.jsonl + queries.jsonl), so:

    python3 benches/knowledge_updates/heldout.py                  # → heldout_data/
    python3 benches/knowledge_updates/score.py --binary target/release/memory-daemon \
        --data benches/knowledge_updates/heldout_data --out /tmp/ku-heldout.json

Written without reading the engine's rules or the main set's templates (see HELDOUT.md).
Standard library only, deterministic: random.Random(seed), default seed 7127.
"""
import argparse
import collections
import datetime as dt
import json
import math
import os
import re
import sys
import random

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT = "claude-code"

# --------------------------------------------------------------------------------------
# Subjects: facts a coding team writes down and later changes.
#   old/new      written forms of the value; index = style ("3 replicas" / "three replicas")
#   cfg          the value as it appears in a config snippet (initial style "config")
#   det_old/new  regexes that find any written form (used to keep filler and questions clean)
#   bump         a numeric increase ("bump it to …" reads naturally)
#   on           "we're on X now" reads naturally
#   incident     "after the incident we moved … to X" reads naturally
# --------------------------------------------------------------------------------------
SUBJECTS = [
    dict(key="default_branch", kind="git_workflow", subj="the default branch", noun="default branch",
         aliases=["the base branch for pull requests", "the integration branch"], file=".github/settings.yml",
         old=["develop"], new=["trunk"], cfg=("develop", "trunk"),
         det_old=[r"\bdevelop\b"], det_new=[r"\btrunk\b"], bump=False, on=True, incident=True,
         snippet="# .github/settings.yml (probot/settings)\nrepository:\n  default_branch: {cfg}\n"
                 "  allow_auto_merge: true\n  delete_branch_on_merge: true",
         decision="Let's settle this: {v} is the default branch for this repo. Feature branches come off it and every PR targets it.",
         passing="Can you open the PR for the invoice PDF work? Base it on {v} like everything else, and tidy up the fixup commits first.",
         bullet="- Default branch: {v} (all PRs target it)",
         uses=["I rebased feat/invoice-pdf onto {v}; the only conflicts were in the lockfile.",
               "The full e2e suite only runs on pushes to {v}, so your draft PR won't be blocked by the flaky checkout spec.",
               "Merged #412 into {v} and the changelog entry went in with it.",
               "I cut the hotfix branch from {v} so it includes yesterday's auth fix."],
         questions=["Which branch should a new pull request be opened against at this point?",
                    "What's the name of the branch that everything gets merged into nowadays?"],
         problem="The release script and half the contributors disagree about which branch is the source of truth, and two PRs went to the wrong base this week."),
    dict(key="staging_url", kind="environments", subj="the staging URL", noun="staging URL",
         aliases=["the pre-prod address", "the QA environment's URL"], file="config/environments.yaml",
         old=["https://staging.tallyho.dev", "staging.tallyho.dev"], new=["https://preview.tallyho.cloud", "preview.tallyho.cloud"],
         cfg=("https://staging.tallyho.dev", "https://preview.tallyho.cloud"),
         det_old=[r"staging\.tallyho\.dev"], det_new=[r"preview\.tallyho\.cloud"], bump=False, on=False, incident=True,
         snippet="# config/environments.yaml\nstaging:\n  base_url: {cfg}\n  seed_data: true\n  basic_auth: false",
         decision="For the record: staging lives at {v}, and that's what QA and the e2e suite should point at.",
         passing="When the cart fix is done, deploy it to staging — {v} — and ping QA, they're waiting on it.",
         bullet="- Staging: {v}",
         uses=["Smoke test against {v} passed: login, cart and checkout are all green.",
               "I pointed the Playwright baseURL at {v} for the nightly run.",
               "The OAuth callback for {v} has to be registered with the identity provider, otherwise login bounces to prod.",
               "QA reported the broken avatar upload on {v}; it was a missing bucket CORS rule."],
         questions=["Where do the QA folks go to try a build before customers get it?",
                    "What address should the end-to-end tests hit for pre-production?"],
         problem="QA keeps testing on a half-broken pre-prod box, and its hostname clashes with the marketing preview sites."),
    dict(key="db_conn_limit", kind="database", subj="the Postgres connection limit", noun="primary's connection limit",
         aliases=["max_connections on the primary", "the pg connection cap"], file="infra/postgres/postgresql.conf",
         old=["120 connections", "a hundred and twenty connections"], new=["300 connections", "three hundred connections"],
         cfg=("120", "300"), det_old=[r"\b120\b", r"hundred and twenty"], det_new=[r"\b300\b", r"three hundred"],
         bump=True, on=False, incident=True,
         snippet="# infra/postgres/postgresql.conf (prod primary)\nmax_connections = {cfg}\nshared_buffers = 4GB\nwork_mem = 16MB",
         decision="We agreed with the DBA: the Postgres primary accepts {v} at most. Size every pool against that.",
         passing="Before you raise the pool size in the worker, remember the primary only allows {v} in total — check the math first.",
         bullet="- Postgres primary: max {v}",
         uses=["PgBouncer's pool times the number of app pods has to stay under {v}, so I capped it at 20 per pod.",
               "The 'too many clients already' errors in the worker logs are us hitting {v} during the reindex.",
               "With {v} on the primary, running the backfill with 8 parallel workers is safe.",
               "I added a Grafana panel that shows active sessions next to the limit of {v}."],
         questions=["How many simultaneous clients will the main database accept right now?",
                    "What's the ceiling on open sessions to our primary Postgres at the moment?"],
         problem="We keep seeing 'sorry, too many clients already' during the nightly batch."),
    dict(key="line_length", kind="lint", subj="the max line length in ruff", noun="line-length limit",
         aliases=["the ruff line-length setting", "the column limit for Python files"], file="pyproject.toml",
         old=["88 characters", "88 chars"], new=["110 characters", "110 chars"], cfg=("88", "110"),
         det_old=[r"\b88\b"], det_new=[r"\b110\b"], bump=True, on=False, incident=False,
         snippet="[tool.ruff]\nline-length = {cfg}\ntarget-version = \"py311\"\n\n[tool.ruff.lint]\nselect = [\"E\", \"F\", \"I\", \"B\"]",
         decision="Style decision: lines are capped at {v}; ruff enforces it and the formatter wraps to it.",
         passing="Run ruff before you push — it complains about anything over {v}, and CI does the same.",
         bullet="- Max line length {v} (ruff E501)",
         uses=["Ruff flagged E501 on the long SQL string in reports.py — it's over {v}, so I wrapped it in parentheses.",
               "I set the editor ruler to {v} so the formatter and the linter agree.",
               "Wrapping at {v} splits this signature over four lines; fine by me.",
               "The generated migration files blow past {v}, so I excluded the migrations folder from E501."],
         questions=["How wide can a line of Python get before the linter complains?",
                    "At what column does the formatter wrap code these days?"],
         problem="Half the diff noise in reviews is the formatter re-wrapping long call chains."),
    dict(key="on_call", kind="people", subj="the primary on-call", noun="primary on-call",
         aliases=["whoever holds the pager", "the on-call engineer for the API"], file="pagerduty/api-primary.yaml",
         old=["Priya Raman", "Priya"], new=["Tomasz Wójcik", "Tomasz"], cfg=("Priya Raman", "Tomasz Wójcik"),
         det_old=[r"\bpriya\b"], det_new=[r"\btomasz\b"], bump=False, on=False, incident=True,
         snippet="# pagerduty/api-primary.yaml (schedule override)\nprimary: {cfg}\nsecondary: Ilya Petrov\nhandoff: 09:00 local",
         decision="{v} is primary on-call for the API through the end of this rotation; page them first.",
         passing="If the webhook errors come back overnight, {v} has the pager this rotation, so loop them in rather than me.",
         bullet="- Primary on-call: {v}",
         uses=["I pinged {v} about the 502s since they're primary on-call this week.",
               "{v} acked the disk-space alert, so I'm leaving the cleanup job alone.",
               "Escalation for the payments webhook goes to {v} first, then the team channel.",
               "Told {v} the migration runs tonight, in case the lock alerts fire."],
         questions=["Who gets paged first if production breaks tonight?",
                    "Who is carrying the pager for the API right now?"],
         problem="The pager load has been brutal for one person this rotation and it's starting to show."),
    dict(key="export_cron", kind="schedules", subj="the nightly export cron", noun="export schedule",
         aliases=["the warehouse export job's schedule", "the nightly dump's cron line"], file="deploy/cron/warehouse-export.yaml",
         old=["02:00 UTC", "2 AM UTC"], new=["04:30 UTC", "4:30 AM UTC"], cfg=("0 2 * * *", "30 4 * * *"),
         det_old=[r"\b02:00\b", r"\b2 ?AM\b", r"0 2 \* \* \*"], det_new=[r"\b04:30\b", r"\b4:30 ?AM\b", r"30 4 \* \* \*"],
         bump=False, on=False, incident=True,
         snippet="# deploy/cron/warehouse-export.yaml\nkind: CronJob\nspec:\n  schedule: \"{cfg}\"\n  concurrencyPolicy: Forbid",
         decision="We'll run the warehouse export at {v} every night; it's the quietest slot we have.",
         passing="The numbers in Metabase come from the {v} export, so anything after that shows up tomorrow — can you tell the analysts?",
         bullet="- Warehouse export: nightly at {v}",
         uses=["The warehouse export kicked off at {v} as usual and finished in 41 minutes.",
               "Because the export starts at {v}, the vacuum job has to finish before then, so I moved it earlier.",
               "Analysts asked why the dashboards lag; it's the {v} export, they refresh after that.",
               "I set the export's alert to fire if the job hasn't finished an hour after {v}."],
         questions=["At what time of night does the warehouse dump start?",
                    "When does the data export job run each night?"],
         problem="The export keeps overlapping the backup window and both jobs slow to a crawl."),
    dict(key="flag_rollout", kind="feature_flags", subj="the new_checkout rollout", noun="new_checkout rollout",
         aliases=["the new_checkout percentage", "the share of users on the redesigned checkout"], file="flags/production.yaml",
         old=["10%", "10 percent"], new=["35%", "35 percent"], cfg=("10", "35"),
         det_old=[r"\b10 ?%", r"\b10 percent", r"\bten percent", r"rollout_percent: 10\b"],
         det_new=[r"\b35 ?%", r"\b35 percent", r"thirty-five percent", r"rollout_percent: 35\b"],
         bump=True, on=True, incident=False,
         snippet="# flags/production.yaml\nnew_checkout:\n  enabled: true\n  rollout_percent: {cfg}\n  sticky_by: user_id",
         decision="Decision from the product sync: new_checkout goes to {v} of users and stays there until we have enough data.",
         passing="Since new_checkout is only at {v}, don't worry about the coupon edge case yet — file it and move on.",
         bullet="- new_checkout rollout: {v}",
         uses=["Conversion in the {v} cohort is flat versus control so far, and no new errors.",
               "At {v} we get roughly 400 checkouts a day on the new flow, enough to see the payment edge cases.",
               "Support tickets about the new checkout are rare — expected at {v}.",
               "The experiment dashboard splits by the {v} cohort; I added the refund rate to it."],
         questions=["How many customers are seeing the redesigned checkout at this point?",
                    "What fraction of traffic gets the new checkout flow right now?"],
         problem="Product wants more signal from the redesigned checkout before the quarter ends."),
    dict(key="api_version", kind="api", subj="the API version clients should target", noun="target API version",
         aliases=["the version new integrations should call", "the current public API"], file="sdk/config.ts",
         old=["v2", "/api/v2"], new=["v3", "/api/v3"], cfg=("v2", "v3"),
         det_old=[r"\bv2\b"], det_new=[r"\bv3\b"], bump=True, on=True, incident=False,
         snippet="// sdk/config.ts\nexport const API_BASE = \"https://api.tallyho.io/{cfg}\";\nexport const TIMEOUT_MS = 15000;",
         decision="New integrations target {v} of the public API; the older one is frozen.",
         passing="The partner's sandbox calls fail because they're building the wrong path — it has to be {v}.",
         bullet="- Public API: {v} for all new integrations",
         uses=["The mobile client was building URLs by hand; I made it read {v} from the shared config.",
               "Regenerated the OpenAPI spec for {v}; the SDK diff is just the new filter param.",
               "Partner docs point at {v}; I fixed the one example that had the wrong path.",
               "The contract tests now run against {v} in CI."],
         questions=["Which revision of our public REST interface should a new integration call?",
                    "Against which interface revision should partners build today?"],
         problem="Partners keep building against the older interface and then tripping over deprecated fields."),
    dict(key="replicas", kind="kubernetes", subj="the api deployment's replica count", noun="api replica count",
         aliases=["the api pod count", "the number of api pods"], file="deploy/helm/api/values.yaml",
         old=["3 replicas", "three replicas"], new=["5 replicas", "five replicas"], cfg=("3", "5"),
         det_old=[r"\b(3|three) replicas", r"replicaCount: 3\b"], det_new=[r"\b(5|five) replicas", r"replicaCount: 5\b"],
         bump=True, on=True, incident=True,
         snippet="# deploy/helm/api/values.yaml\nreplicaCount: {cfg}\nresources:\n  requests:\n    cpu: 500m\n    memory: 512Mi",
         decision="We'll run the api deployment with {v} in prod — enough headroom for a node to drain.",
         passing="The rollout takes a few minutes, it's {v} and maxSurge is 1, so just let it finish.",
         bullet="- api deployment: {v}",
         uses=["With {v} a rolling update takes about four minutes.",
               "I checked the PDB: minAvailable 2 works with {v}.",
               "HPA is off, so it's a flat {v}; the CPU graph shows 60% at peak.",
               "Load test results assume {v} behind the service; I noted that in the report."],
         questions=["How many copies of the api service are running in prod?",
                    "What's the pod count for the api deployment at the moment?"],
         problem="Latency spikes every time a single api pod gets rescheduled."),
    dict(key="python_version", kind="runtime", subj="the Python version for the services", noun="Python runtime",
         aliases=["the interpreter version in our base image", "our CPython release"], file=".python-version",
         old=["Python 3.10", "3.10"], new=["Python 3.12", "3.12"], cfg=("3.10", "3.12"),
         det_old=[r"\b3\.10\b", r"py310"], det_new=[r"\b3\.12\b", r"py312"], bump=True, on=True, incident=False,
         snippet="# .python-version\n{cfg}\n\n# pyproject.toml\nrequires-python = \">={cfg}\"",
         decision="We're standardising on {v} for every backend service; the base image and CI follow that.",
         passing="Your venv is probably on the system interpreter; recreate it with {v}, that's what CI and the image use.",
         bullet="- Python: {v} everywhere (image + CI)",
         uses=["The CI matrix only builds {v}, so the test job runs once per push.",
               "I regenerated the lockfile under {v}; three wheels changed.",
               "mypy's python_version is set to match {v}, which is why it accepts the new syntax.",
               "The slim base image for {v} is smaller than the full one, so I switched the worker Dockerfile."],
         questions=["Which interpreter release do our backend services run on?",
                    "What Python release is the backend base image built on at the moment?"],
         problem="Some typing features we want aren't available and the base image is getting old."),
    dict(key="node_version", kind="runtime", subj="the Node version for the frontend build", noun="Node runtime",
         aliases=["the Node.js major we build with", "the frontend's Node major"], file=".nvmrc",
         old=["Node 18", "Node.js 18"], new=["Node 22", "Node.js 22"], cfg=("18", "22"),
         det_old=[r"node(\.js)? ?18\b", r"\">=18"], det_new=[r"node(\.js)? ?22\b", r"\">=22"],
         bump=True, on=True, incident=False,
         snippet="# .nvmrc\n{cfg}\n\n// package.json\n\"engines\": {{ \"node\": \">={cfg}\" }}",
         decision="The frontend builds on {v}; local, CI and the Docker build all pin it.",
         passing="If `npm ci` complains about engines, switch to {v} with nvm — that's what the project expects.",
         bullet="- Frontend runtime: {v}",
         uses=["The Vite build under {v} takes about 48 seconds in CI.",
               "`fetch` is global on {v}, so I dropped node-fetch from the dependencies.",
               "Renovate wanted an @types/node newer than {v}; I pinned it to match the runtime.",
               "The Dockerfile's build stage uses the {v} alpine image, same as CI."],
         questions=["Which JavaScript runtime release does the web app get built with?",
                    "What major of the JS runtime does CI use for the frontend now?"],
         problem="A couple of dependencies dropped support for the runtime we build with and Renovate PRs pile up."),
    dict(key="js_test_runner", kind="testing", subj="the frontend test runner", noun="test runner",
         aliases=["the JS test framework", "the unit-test tool for the web app"], file="web/package.json",
         old=["Jest"], new=["Vitest"], cfg=("jest", "vitest"),
         det_old=[r"\bjest\b"], det_new=[r"\bvitest\b"], bump=False, on=True, incident=False,
         snippet="// web/package.json (scripts)\n\"test\": \"{cfg} --coverage\",\n\"test:watch\": \"{cfg} --watch\"",
         decision="Decision: unit tests for the web app are written for {v}. No mixing frameworks.",
         passing="Add a test for the empty-cart state while you're in there — {v}, same as the other specs in that folder.",
         bullet="- Web unit tests: {v}",
         uses=["Ported the date-picker tests to {v}'s fake timers; the flake is gone.",
               "Updated the snapshots with {v}; only the header markup changed.",
               "{v} picks up the global setup file, so the matchMedia mock lives there now.",
               "The {v} run in CI takes about three minutes with coverage on."],
         questions=["What do we use to run the web app's unit tests these days?",
                    "Which framework should new frontend specs be written for?"],
         problem="The frontend suite takes forever and the ESM transforms break on every dependency upgrade."),
    dict(key="secret_store", kind="security", subj="the secret store", noun="secrets backend",
         aliases=["our secrets backend", "the secrets tooling"], file="deploy/app.env.tpl",
         old=["HashiCorp Vault", "Vault"], new=["Doppler"], cfg=("vault", "doppler"),
         det_old=[r"\bvault\b"], det_new=[r"\bdoppler\b"], bump=False, on=True, incident=True,
         snippet="# deploy/app.env.tpl\nSECRETS_BACKEND={cfg}\nSECRETS_PATH=tallyho/prod/api",
         decision="All secrets go into {v} — nothing in env files or CI variables.",
         passing="Don't paste the Stripe key in the ticket; put it in {v} and reference it from the deployment.",
         bullet="- Secrets: {v} only",
         uses=["I put the webhook signing secret in {v}; the app reads it at boot.",
               "Rotated the SMTP password in {v}; pods pick it up on restart.",
               "The deploy job pulls its credentials from {v} through the OIDC role, no static keys.",
               "Added the new Sentry DSN to {v} for staging and prod."],
         questions=["Where should I store a new API credential so the app can read it?",
                    "Which system holds our database passwords and tokens now?"],
         problem="The secrets sidecar keeps crashing on startup and the unseal ritual after every restart is a chore."),
    dict(key="broker", kind="infrastructure", subj="the message broker", noun="message broker",
         aliases=["the queue between the services", "our event bus"], file="services/common/settings.py",
         old=["RabbitMQ"], new=["NATS JetStream", "NATS"], cfg=("rabbitmq", "nats"),
         det_old=[r"\brabbit(mq)?\b"], det_new=[r"\bnats\b", r"jetstream"], bump=False, on=True, incident=True,
         snippet="# services/common/settings.py\nBROKER_KIND = \"{cfg}\"\nBROKER_URL = env(\"BROKER_URL\")\nPREFETCH = 20",
         decision="We'll use {v} between the services; it's what ops knows how to run.",
         passing="The email worker isn't consuming — can you check whether its queue in {v} has consumers attached?",
         bullet="- Message broker: {v}",
         uses=["The email worker consumes from {v}; failed messages go to a dead-letter queue after five attempts.",
               "I added a startup check that pings {v} before the consumer loop starts.",
               "docker-compose brings up {v} for local dev; the port is in .env.example.",
               "Order events are published to {v} after the transaction commits, never inside it."],
         questions=["What carries events between the order service and the workers?",
                    "Which piece of infrastructure queues our async jobs today?"],
         problem="The broker cluster split-brained twice this quarter and nobody enjoys operating it."),
    dict(key="cdn", kind="infrastructure", subj="the CDN in front of the storefront", noun="CDN",
         aliases=["our edge cache provider", "the edge network"], file="infra/cdn.tf",
         old=["Cloudflare"], new=["Fastly"], cfg=("cloudflare", "fastly"),
         det_old=[r"cloudflare"], det_new=[r"fastly"], bump=False, on=True, incident=True,
         snippet="# infra/cdn.tf\nmodule \"edge\" {{\n  provider_name = \"{cfg}\"\n  origin        = \"origin.tallyho.io\"\n}}",
         decision="The storefront sits behind {v}; static assets and cached pages are served from there.",
         passing="After you deploy the CSS fix, purge the {v} cache for /static or people will keep getting the old file.",
         bullet="- CDN: {v} in front of the storefront",
         uses=["Purged the {v} cache for /static after the deploy; the stale CSS is gone.",
               "The 5xx spike at the edge came from {v} timing out on the origin, not from the app.",
               "Image resizing happens at the {v} edge, so the origin only serves originals.",
               "I added a cache-control header so {v} keeps product pages for five minutes."],
         questions=["Which company serves our static assets at the edge?",
                    "Who caches the storefront's pages close to users?"],
         problem="Cache purges take ages to propagate and the bill went up again."),
    dict(key="backup_retention", kind="data", subj="database backup retention", noun="backup retention",
         aliases=["how long we keep DB snapshots", "the snapshot retention window"], file="terraform/rds.tf",
         old=["14 days", "two weeks"], new=["35 days", "five weeks"], cfg=("14", "35"),
         det_old=[r"\b14 days", r"two weeks", r"fourteen days", r"backup_retention_period = 14\b"],
         det_new=[r"\b35 days", r"five weeks", r"thirty-five days", r"backup_retention_period = 35\b"],
         bump=True, on=False, incident=True,
         snippet="# terraform/rds.tf\nbackup_retention_period = {cfg}\npreferred_backup_window = \"03:00-04:00\"\ndeletion_protection = true",
         decision="Policy: automated database backups are kept for {v}; that's the restore window we promise.",
         passing="Don't panic about the dropped column — snapshots go back {v}, so we can restore the table if the fix doesn't work.",
         bullet="- DB backups retained {v}",
         uses=["Point-in-time restore can go back {v}, so last month's bad migration is out of reach but this one isn't.",
               "Snapshot storage cost is mostly from keeping {v} of snapshots; I put the number in the cost doc.",
               "Compliance asked how far back we can restore; I told them {v}.",
               "For the restore drill I picked a snapshot from almost {v} ago on purpose."],
         questions=["How far back can we restore the database from snapshots?",
                    "For how long are the automated DB backups kept?"],
         problem="The audit flagged that our restore window is shorter than the bank contract requires."),
    dict(key="upload_size", kind="product_limits", subj="the max upload size", noun="upload limit",
         aliases=["client_max_body_size for uploads", "the attachment size cap"], file="nginx/site.conf",
         old=["25 MB", "25 megabytes"], new=["100 MB", "100 megabytes"], cfg=("25M", "100M"),
         det_old=[r"\b25 ?MB\b", r"25 megabytes", r"\b25M\b"], det_new=[r"\b100 ?MB\b", r"100 megabytes", r"\b100M\b"],
         bump=True, on=False, incident=False,
         snippet="# nginx/site.conf\nclient_max_body_size {cfg};\nproxy_read_timeout 60s;",
         decision="We'll cap uploads at {v} per file; nginx and the presign policy both enforce it.",
         passing="The customer's 413 is expected, by the way — the file was over {v}. Can you make the error message friendlier?",
         bullet="- Max upload: {v} per file",
         uses=["I added a client-side check so the form rejects files above {v} before uploading.",
               "The presigned-URL policy also enforces {v}, so both upload paths agree.",
               "The help-center article says {v}; I linked it from the error toast.",
               "The e2e test uploads a file just under {v} to cover the happy path."],
         questions=["How big can an attachment be before the server rejects it?",
                    "What's the largest file a customer is allowed to upload?"],
         problem="Customers keep failing to attach scanned contracts and support is drowning in tickets about it."),
    dict(key="review_rule", kind="process", subj="the review rule for merging", noun="approval requirement",
         aliases=["branch protection's approval count", "the number of sign-offs a PR needs"], file=".github/branch-protection.json",
         old=["one approving review", "1 approval"], new=["two approving reviews", "2 approvals"], cfg=("1", "2"),
         det_old=[r"\b(one|1) approv", r"\bsingle approv", r"review_count\"?: 1\b"],
         det_new=[r"\b(two|2) approv", r"review_count\"?: 2\b"], bump=True, on=False, incident=True,
         snippet="// .github/branch-protection.json\n{{\n  \"required_approving_review_count\": {cfg},\n  \"dismiss_stale_reviews\": true\n}}",
         decision="Team rule: a PR needs {v} before it can merge, no exceptions for small changes.",
         passing="Your PR is fine once it has {v} — I'll take a look after lunch.",
         bullet="- Merging requires {v}",
         uses=["#388 has {v} now, so I'll merge it once CI is green.",
               "Branch protection lists {v} as required, so I asked Dana to look at the migration.",
               "The PR is only blocked on CI; it already has {v}.",
               "I documented {v} in CONTRIBUTING.md under 'Merging'."],
         questions=["How many teammates have to sign off before a pull request can merge?",
                    "What does branch protection require from reviewers right now?"],
         problem="Two bad merges went through this month after a quick glance from a single person."),
    dict(key="release_day", kind="process", subj="release day", noun="release day",
         aliases=["the weekly ship day", "the day we cut the weekly release"], file="docs/release-process.md",
         old=["Thursday", "Thursdays"], new=["Tuesday", "Tuesdays"], cfg=("thursday", "tuesday"),
         det_old=[r"\bthursdays?\b", r"\bthu\b"], det_new=[r"\btuesdays?\b", r"\btue\b"], bump=False, on=False, incident=True,
         snippet="# docs/release-process.md (front matter)\nrelease_weekday: {cfg}\nfreeze_starts: previous afternoon",
         decision="We'll ship the weekly release on {v}; the freeze starts the afternoon before.",
         passing="Can this wait until after we ship on {v}? I don't want a schema change riding along with the release.",
         bullet="- Weekly release: {v}",
         uses=["The changelog has to be ready before we ship on {v}, so I drafted it now.",
               "Since we release on {v}, I'll merge the migration right after so it ships alone next time.",
               "QA signs off the release candidate the day before we ship on {v}.",
               "The release reminder bot posts on {v} at 10:00."],
         questions=["On which weekday does the weekly release go out?",
                    "When in the week do we ship to production?"],
         problem="Shipping right before the weekend has bitten us — nobody wants to debug prod on a Saturday morning."),
    dict(key="slo", kind="reliability", subj="the availability SLO for checkout", noun="checkout availability SLO",
         aliases=["the uptime objective for checkout", "checkout's availability target"], file="slo/checkout.yaml",
         old=["99.5%", "99.5 percent"], new=["99.9%", "99.9 percent"], cfg=("99.5", "99.9"),
         det_old=[r"99\.5"], det_new=[r"99\.9"], bump=True, on=False, incident=True,
         snippet="# slo/checkout.yaml\nservice: checkout\nobjective: {cfg}\nwindow: rolling-month",
         decision="We're committing to {v} availability for checkout, measured monthly.",
         passing="That outage ate a chunk of the error budget; we're still above {v} for the month, but barely.",
         bullet="- Checkout SLO: {v} monthly availability",
         uses=["The burn-rate alert is computed from the {v} objective; I kept the fast-burn window at one hour.",
               "Last month we stayed within {v}, so the deploy freeze doesn't kick in.",
               "The Grafana SLO panel is configured for {v}; I fixed its query to exclude health checks.",
               "I added the {v} objective to checkout's service catalog entry."],
         questions=["What availability are we promising for the checkout service?",
                    "How much downtime is checkout allowed — what's the objective?"],
         problem="Sales promised a big customer better uptime than we officially commit to."),
    dict(key="log_retention", kind="observability", subj="log retention in Loki", noun="log retention",
         aliases=["how long Loki keeps logs", "the Loki retention period"], file="infra/loki/config.yaml",
         old=["7 days", "one week"], new=["30 days", "thirty days"], cfg=("168h", "720h"),
         det_old=[r"\b(7|seven) days\b", r"\bone week\b", r"\b168h\b"], det_new=[r"\b(30|thirty) days\b", r"\b720h\b"],
         bump=True, on=False, incident=True,
         snippet="# infra/loki/config.yaml\nlimits_config:\n  retention_period: {cfg}\ncompactor:\n  retention_enabled: true",
         decision="Loki keeps logs for {v}; anything older we simply don't have, so don't promise customers more.",
         passing="You won't find logs from the start of the month — Loki only keeps {v}. Check the audit table instead.",
         bullet="- Log retention (Loki): {v}",
         uses=["Logs only go back {v}, so anything older has to come from the audit table.",
               "I set the Grafana explore default range to match the {v} of logs we keep.",
               "Debugging the tenant issue from earlier won't work with logs — Loki keeps {v}.",
               "The storage estimate for Loki assumes {v} of retention at current volume."],
         questions=["How far back can I search application logs?",
                    "For how long do our logs stick around before they're deleted?"],
         problem="We couldn't investigate the billing dispute because the relevant logs were already gone."),
    dict(key="docker_registry", kind="ci_cd", subj="the container registry", noun="container registry",
         aliases=["where CI pushes images", "the image registry"], file=".github/workflows/release.yml",
         old=["Docker Hub", "docker.io/tallyho"], new=["GHCR", "ghcr.io/tallyho"], cfg=("docker.io/tallyho", "ghcr.io/tallyho"),
         det_old=[r"docker ?hub", r"docker\.io"], det_new=[r"\bghcr\b", r"ghcr\.io"], bump=False, on=True, incident=True,
         snippet="# .github/workflows/release.yml (excerpt)\nenv:\n  REGISTRY: {cfg}\n  IMAGE: api",
         decision="Images go to {v}; the cluster pulls from there with the shared pull secret.",
         passing="The deploy failed with ImagePullBackOff — check that the tag actually exists on {v}.",
         bullet="- Container registry: {v}",
         uses=["CI pushed api:1.42.0 to {v} and Argo CD picked it up within a minute.",
               "I added the image pull secret for {v} to the new namespace.",
               "The release workflow tags images with the git SHA before pushing to {v}.",
               "Cleaned up untagged images on {v}; we were paying for a lot of junk."],
         questions=["Where do our built container images get pushed?",
                    "Which registry does the cluster pull application images from?"],
         problem="Pull rate limits keep breaking the build agents and the org's seats are expensive."),
    dict(key="rate_limit", kind="api", subj="the public API rate limit", noun="per-key rate limit",
         aliases=["the per-key throttle on the gateway", "the API quota per key"], file="gateway/ratelimit.yaml",
         old=["600 requests per minute", "10 requests per second"], new=["1,500 requests per minute", "25 requests per second"],
         cfg=("600", "1500"),
         det_old=[r"\b600\b", r"\b10 req(uest)?s? ?(per|/) ?s"], det_new=[r"\b1,?500\b", r"\b25 req(uest)?s? ?(per|/) ?s"],
         bump=True, on=False, incident=False,
         snippet="# gateway/ratelimit.yaml\npublic_api:\n  per_key_per_minute: {cfg}\n  burst: 50",
         decision="Public API limit: {v} per key. Partners get that in the contract, so we don't change it casually.",
         passing="Those 429s from the partner are legit; they're sending more than {v} during their sync.",
         bullet="- Public API: {v} per key",
         uses=["I documented {v} in the partner guide, with the Retry-After behaviour.",
               "The load test stays under {v} per key, so it won't trip the limiter.",
               "Their nightly sync bursts past {v}; I suggested they spread it over an hour.",
               "The limiter counts {v} per API key, not per IP — I clarified that in the FAQ."],
         questions=["How hard can one API key hit us before getting throttled?",
                    "What's the per-client request allowance on the gateway now?"],
         problem="Our biggest partner's sync keeps getting throttled and their account manager is escalating."),
    dict(key="coverage", kind="ci_gates", subj="the coverage threshold in CI", noun="coverage gate",
         aliases=["the fail_under floor in the coverage config", "the minimum test coverage"], file="pyproject.toml",
         old=["80%", "80 percent"], new=["85%", "85 percent"], cfg=("80", "85"),
         det_old=[r"\b80 ?%", r"\b80 percent", r"fail_under = 80\b"], det_new=[r"\b85 ?%", r"\b85 percent", r"fail_under = 85\b"],
         bump=True, on=False, incident=False,
         snippet="[tool.coverage.report]\nfail_under = {cfg}\nshow_missing = true\nskip_covered = true",
         decision="We'll gate merges on {v} line coverage; the CI job fails below it.",
         passing="Your PR dropped coverage below {v}, that's why the check is red — add a test for the refund branch.",
         bullet="- Coverage gate: {v}",
         uses=["Coverage on this branch dipped under the {v} gate, so I added tests for the refund path.",
               "The generated client is excluded from coverage so it doesn't skew the {v} threshold.",
               "With the {v} threshold, the new module needs tests for its error paths too.",
               "I mentioned the {v} gate in the README so newcomers aren't surprised by red builds."],
         questions=["How much of the code must the tests exercise for CI to pass?",
                    "What test-coverage floor does the pipeline enforce right now?"],
         problem="We keep finding untested error paths in code that passed CI."),
    dict(key="http_timeout", kind="timeouts", subj="the timeout on calls to the payment provider", noun="payment provider timeout",
         aliases=["the Adyen client timeout", "PAYMENTS_HTTP_TIMEOUT"], file="config/payments.toml",
         old=["10 seconds", "10s"], new=["4 seconds", "4s"], cfg=("10", "4"),
         det_old=[r"\b10 ?s(ec(ond)?s?)?\b", r"ten seconds", r"timeout_seconds = 10\b"],
         det_new=[r"\b4 ?s(ec(ond)?s?)?\b", r"four seconds", r"timeout_seconds = 4\b"],
         bump=False, on=False, incident=True,
         snippet="# config/payments.toml\n[adyen]\ntimeout_seconds = {cfg}\nretries = 1",
         decision="We give the payment provider {v} per call; after that we fail the attempt and retry once.",
         passing="The hung checkout in the ticket is just our {v} timeout to the payment provider plus the retry — nothing's deadlocked.",
         bullet="- Payment provider timeout: {v}",
         uses=["I made the test double sleep just past {v} to exercise the timeout path.",
               "With {v} per call and one retry, the worst case still fits inside the gateway's limit.",
               "The provider's p99 is well under {v}, so timeouts in the logs mean a real outage on their side.",
               "I log a warning whenever a provider call gets within a second of {v}."],
         questions=["How long do we wait on the card processor before giving up on a request?",
                    "When does a call to the payments vendor get abandoned?"],
         problem="During the provider's brownout our checkout threads piled up waiting on them."),
    dict(key="celery_concurrency", kind="workers", subj="Celery worker concurrency", noun="worker concurrency",
         aliases=["the celery --concurrency setting", "the worker pool size per celery node"], file="deploy/worker.yaml",
         old=["8 workers", "eight worker processes"], new=["16 workers", "sixteen worker processes"], cfg=("8", "16"),
         det_old=[r"\b(8|eight) worker", r"concurrency=8\b"], det_new=[r"\b(16|sixteen) worker", r"concurrency=16\b"],
         bump=True, on=False, incident=True,
         snippet="# deploy/worker.yaml\ncommand: [\"celery\", \"-A\", \"app\", \"worker\", \"--concurrency={cfg}\"]\nresources:\n  limits:\n    memory: 4Gi",
         decision="Each celery node runs {v}; more than that and the thumbnail tasks starve each other for memory.",
         passing="The queue backlog is expected after a bulk import — it's {v} per node, it drains in about ten minutes.",
         bullet="- Celery: {v} per node",
         uses=["Memory per celery node looks fine with {v}; RSS tops out around 2 GB.",
               "The DB pool per node has to cover {v} plus the beat process.",
               "Flower shows all {v} busy during the nightly reindex.",
               "I sized the load test so each node's {v} stay busy without queueing."],
         questions=["How many tasks can each celery node process in parallel?",
                    "How many child processes does a worker node run right now?"],
         problem="The thumbnail queue backs up for an hour after every bulk import."),
    dict(key="merge_strategy", kind="git_workflow", subj="the PR merge method", noun="merge method",
         aliases=["the GitHub merge button setting", "the way PRs get merged"], file=".github/repo-settings.yml",
         old=["squash merge", "squash-and-merge"], new=["rebase merge", "rebase-and-merge"], cfg=None,
         det_old=[r"squash"], det_new=[r"rebase[- ](and[- ])?merge"], bump=False, on=False, incident=False,
         snippet=None,
         decision="PRs land with {v} only; I've disabled the other buttons in the repo settings.",
         passing="Don't worry about the messy WIP commits, it's {v} anyway — just make the PR title a good commit message.",
         bullet="- Merge method: {v}",
         uses=["I enabled only {v} on the new service repo as well, to match this one.",
               "The changelog script assumes {v}; it walks the commits on the integration branch.",
               "CONTRIBUTING.md now says we use {v} and explains why.",
               "The merge queue is configured for {v}, so it'll land your PR the same way."],
         questions=["When a pull request lands, how are its commits put onto the branch?",
                    "Which merge button is enabled on GitHub for our repos?"],
         problem="Bisecting last week's regression was painful because of how our history looks."),
    dict(key="issue_tracker", kind="tools", subj="the issue tracker", noun="issue tracker",
         aliases=["our ticketing tool", "where we file bugs"], file="CONTRIBUTING.md",
         old=["Jira"], new=["Linear"], cfg=None,
         det_old=[r"\bjira\b"], det_new=[r"\blinear\b"], bump=False, on=True, incident=False,
         snippet=None,
         decision="Bugs and tasks go into {v}; GitHub issues are closed for the team.",
         passing="Log that flaky test in {v} so it doesn't get lost, and link this PR.",
         bullet="- Tickets: {v}",
         uses=["I filed the flaky-test ticket in {v} and linked this PR.",
               "The commit message references the {v} issue key, so it'll auto-link.",
               "The triage view in {v} has three untriaged bugs from the weekend.",
               "I moved the export epic's subtasks in {v} to the next cycle."],
         questions=["Where do bug reports and tasks get filed for this team?",
                    "Which tool holds the team's backlog at the moment?"],
         problem="Nobody updates tickets because the tracker is slow and the workflow has eleven states."),
    dict(key="code_owner", kind="people", subj="the CODEOWNERS entry for billing/", noun="billing code owner",
         aliases=["the required reviewer for billing/", "the billing module owner"], file=".github/CODEOWNERS",
         old=["@lena-k"], new=["@payments-core"], cfg=("@lena-k", "@payments-core"),
         det_old=[r"lena-k"], det_new=[r"payments-core"], bump=False, on=False, incident=True,
         snippet="# .github/CODEOWNERS\n/billing/   {cfg}\n/infra/     @platform\n*.sql       @data-eng",
         decision="Billing changes need {v} as reviewer; I put it in CODEOWNERS.",
         passing="This touches billing/, so {v} gets auto-requested — no need to ping anyone else.",
         bullet="- billing/ owner: {v}",
         uses=["The PR touches billing/, so {v} was auto-requested as reviewer.",
               "I asked {v} about the proration rounding before touching it.",
               "{v} approved the invoice template change.",
               "Waiting on {v} for the tax rounding PR; everything else is merged."],
         questions=["Who has to review changes under the billing directory?",
                    "Which GitHub handle owns the billing module in CODEOWNERS?"],
         problem="Billing PRs sit for days because a single person is the bottleneck for reviews."),
    dict(key="postgres_version", kind="database", subj="the Postgres major version", noun="Postgres major",
         aliases=["the database engine version on RDS", "our PG major"], file="docker-compose.yml",
         old=["Postgres 14", "PostgreSQL 14"], new=["Postgres 16", "PostgreSQL 16"], cfg=("14", "16"),
         det_old=[r"postgres(ql)?[ :]?14\b", r"\bpg ?14\b"], det_new=[r"postgres(ql)?[ :]?16\b", r"\bpg ?16\b"],
         bump=True, on=True, incident=False,
         snippet="# docker-compose.yml\n  db:\n    image: postgres:{cfg}\n    ports: [\"5432:5432\"]",
         decision="Production runs {v} on RDS; keep local and CI on the same major.",
         passing="Use the docker-compose database, it's {v} like prod, so the JSON path query behaves the same.",
         bullet="- Database: {v} (RDS)",
         uses=["The local compose image is {v} to match RDS.",
               "pg_dump from my laptop refused to talk to {v} because the client was older; I used the container's client.",
               "I checked that the jsonb_path_query call works on {v}.",
               "The RDS parameter group for {v} has the statement timeout we want."],
         questions=["Which release of the database engine is production on?",
                    "What major version does our RDS instance run?"],
         problem="RDS sent the end-of-support notice for our engine release and we want the newer planner anyway."),
    dict(key="build_tool", kind="tools", subj="the monorepo build tool", noun="monorepo build tool",
         aliases=["our task runner for the monorepo", "the workspace build orchestrator"], file="package.json",
         old=["Nx"], new=["Turborepo", "Turbo"], cfg=("nx", "turbo"),
         det_old=[r"\bnx\b"], det_new=[r"\bturbo(repo)?\b"], bump=False, on=True, incident=False,
         snippet="// package.json (root)\n\"scripts\": {{ \"build\": \"{cfg} run build\", \"test\": \"{cfg} run test\" }}",
         decision="Monorepo builds go through {v}; don't call package scripts directly in CI.",
         passing="CI only rebuilt two packages because {v} saw nothing else changed — that's why it was so fast.",
         bullet="- Monorepo builds: {v}",
         uses=["{v} only rebuilt the two affected packages, so CI finished in six minutes.",
               "The remote cache for {v} is hitting about seventy percent of tasks today.",
               "I registered the new package with {v} so its tests run in CI.",
               "Cleared the local {v} cache; the stale type-check result is gone."],
         questions=["What orchestrates builds and caching across the packages in the monorepo?",
                    "Which tool decides what to rebuild in the workspace these days?"],
         problem="The build tool's plugin upgrades break something every month and the config is getting unreadable."),
]

WORDINGS = ["make_it", "change_that", "bump_it", "synonym", "not_anymore", "we_are_on", "is_the_new",
            "going_forward", "after_incident", "update_colon", "ok_then", "assistant_states"]


def fits(s, w):
    if w == "bump_it":
        return s["bump"]
    if w == "we_are_on":
        return s["on"]
    if w == "after_incident":
        return s["incident"]
    return True


def cap(t):
    return t[:1].upper() + t[1:]


def compile_det(s):
    return ([re.compile(p, re.I) for p in s["det_old"]], [re.compile(p, re.I) for p in s["det_new"]])


def hits(text, pats):
    return any(p.search(text) for p in pats)


# --------------------------------------------------------------------------------------
# Filler: realistic coding-session noise. Every generator returns [(kind, text), ...].
# --------------------------------------------------------------------------------------
MODS = ["orders", "invoices", "auth", "search", "notifications", "inventory", "reports", "accounts",
        "shipping", "webhooks", "catalog", "pricing", "refunds", "tenants"]
FUNCS = ["compute_totals", "apply_discount", "resolve_tenant", "normalize_address", "build_invoice", "sync_stock",
         "render_receipt", "parse_webhook", "schedule_retry", "merge_carts", "refresh_token", "export_rows",
         "split_shipment", "reconcile_payouts", "dedupe_events"]
FIELDS = ["tenant_id", "currency", "line_items", "external_ref", "shipping_zone", "coupon_code", "idempotency_key",
          "locale", "vat_number", "customer_email"]
COMPONENTS = ["OrderList", "CartSummary", "InvoiceTable", "AddressForm", "SearchBar", "RefundDialog", "StockBadge",
              "AccountMenu", "ShipmentTimeline", "PriceTag"]
PEOPLE = ["Dana", "Marco", "Aiko", "Sven", "Lucía", "Kwame", "Noor", "Ilya", "Fatima", "Jonas"]
COMMITS = ["fix: rounding of tax lines in invoices", "feat(search): highlight matched terms", "chore: bump eslint plugins",
           "refactor: extract address normalizer", "test: regression for duplicate webhook", "fix(auth): refresh token race",
           "feat(refunds): partial refunds for bundles", "perf: batch stock updates", "docs: explain tenant headers",
           "fix: empty cart crash on mobile", "ci: cache pip downloads", "feat(reports): CSV export for finance",
           "fix(shipping): zone lookup for islands", "chore: drop unused fixtures", "refactor(orders): split service module",
           "fix: timezone of receipt dates", "feat: admin impersonation audit log", "test: speed up db fixtures",
           "fix(webhooks): verify signature before parsing", "chore(deps): update pydantic", "feat(catalog): archived products",
           "fix: N+1 in order history", "style: reorder imports", "feat(pricing): per-tenant price lists"]
BRANCH_WORDS = ["invoice-pdf", "stock-sync", "partial-refunds", "search-facets", "tenant-headers", "address-cleanup",
                "receipt-timezones", "order-history-perf", "webhook-sigs", "price-lists", "admin-audit", "cart-crash"]


def hx(r, n=7):
    return "".join(r.choice("0123456789abcdef") for _ in range(n))


def f_git_log(r, c):
    n = r.randint(6, 11)
    lines = [f"{hx(r)} {m}" for m in r.sample(COMMITS, n)]
    return [("tool_call", f"bash: git log --oneline -{n}"), ("tool_result", "\n".join(lines))]


def f_git_status(r, c):
    mod = r.choice(MODS)
    files = [f"app/{mod}/{x}.py" for x in r.sample(["service", "api", "models", "tasks", "schemas"], r.randint(1, 3))]
    out = (f"On branch {c['branch']}\nChanges not staged for commit:\n"
           + "\n".join(f"\tmodified:   {f}" for f in files)
           + f"\n\nUntracked files:\n\ttests/{mod}/test_{r.choice(FUNCS)}.py\n")
    return [("tool_call", "bash: git status"), ("tool_result", out)]


def f_git_diff(r, c):
    mod, fn, fld = r.choice(MODS), r.choice(FUNCS), r.choice(FIELDS)
    ln = r.randint(20, 240)
    diff = (f"diff --git a/app/{mod}/service.py b/app/{mod}/service.py\n"
            f"index {hx(r)}..{hx(r)} 100644\n--- a/app/{mod}/service.py\n+++ b/app/{mod}/service.py\n"
            f"@@ -{ln},7 +{ln},9 @@ def {fn}(session, payload):\n"
            f"     record = session.get(Model, payload.id)\n"
            f"-    if record.{fld} is None:\n-        raise ValueError(\"missing {fld}\")\n"
            f"+    if record is None:\n+        raise NotFound(payload.id)\n"
            f"+    if getattr(record, \"{fld}\", None) is None:\n+        log.warning(\"{fn}: no {fld} on %s\", record.id)\n+        return None\n"
            f"     return _apply(record, payload)\n")
    pre = r.choice([None, "Show me what you changed before I review.", "What's the diff so far?"])
    out = ([("user_message", pre)] if pre else []) + [("tool_call", f"bash: git diff app/{mod}/service.py"), ("tool_result", diff)]
    if r.random() < 0.6:
        out.append(("assistant_message", r.choice([
            f"The change makes `{fn}` tolerate a missing record instead of blowing up on `{fld}`; callers already handle a None return, I checked the call sites.",
            f"Just the guard in `{fn}` plus a warning log. I didn't touch the `{fld}` validation itself — that belongs in the schema, separate PR.",
            f"Small diff: `{fn}` returns None for deleted records now. The caller in the {mod} worker already skips None, so no behaviour change there."])))
    return out


def traceback_py(r, mod, fn, fld):
    kind = r.randrange(4)
    t = f"tests/{mod}/test_{r.choice(['api', 'service', 'tasks'])}.py"
    name = f"test_{fn}_{r.choice(['handles_empty', 'rejects_bad_input', 'is_idempotent', 'happy_path', 'with_tenant'])}"
    ln, ln2 = r.randint(20, 300), r.randint(20, 300)
    if kind == 0:
        body = (f"    def {name}(client, db_session):\n        resp = client.post(\"/{mod}\", json=make_payload())\n"
                f">       assert resp.status_code == 201\nE       assert 422 == 201\n"
                f"E        +  where 422 = <Response [422]>.status_code\n\n{t}:{ln}: AssertionError\n"
                f"------------------------------ Captured log call -------------------------------\n"
                f"WARNING  app.{mod}.api:api.py:{ln2} validation failed: field required ({fld})")
        summ = "assert 422 == 201"
    elif kind == 1:
        body = (f"    def {name}(db_session, factory):\n        obj = factory.create()\n>       result = {fn}(db_session, obj)\n\n"
                f"{t}:{ln}:\n_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n"
                f"app/{mod}/service.py:{ln2}: in {fn}\n    return record.{fld}.strip()\n"
                f"E   AttributeError: 'NoneType' object has no attribute 'strip'")
        summ = "AttributeError: 'NoneType' object has no attribute 'strip'"
    elif kind == 2:
        body = (f"app/{mod}/repository.py:{ln2}: in save\n    session.flush()\n"
                f".venv/lib/site-packages/sqlalchemy/orm/session.py:4179: in flush\n    self._flush(objects)\n"
                f"E   sqlalchemy.exc.IntegrityError: (psycopg.errors.UniqueViolation) duplicate key value violates "
                f"unique constraint \"uq_{mod}_{fld}\"\nE   DETAIL:  Key ({fld})=(abc-{r.randint(1000, 9999)}) already exists.")
        summ = "sqlalchemy.exc.IntegrityError: duplicate key"
    else:
        body = (f"    def {name}(payload):\n>       out = {fn}(payload)\n\n{t}:{ln}:\n"
                f"app/{mod}/service.py:{ln2}: in {fn}\n    zone = ZONES[payload[\"{fld}\"]]\nE   KeyError: '{fld}'")
        summ = f"KeyError: '{fld}'"
    n, secs = r.randint(12, 240), f"{r.randint(1, 40)}.{r.randint(10, 99)}"
    res = (f"F\n=================================== FAILURES ===================================\n"
           f"____________________________ {name} ____________________________\n\n{body}\n"
           f"=========================== short test summary info ============================\n"
           f"FAILED {t}::{name} - {summ}\n1 failed, {n} passed in {secs}s")
    return t, name, res, kind


def f_pytest_fail(r, c):
    mod, fn, fld = r.choice(MODS), r.choice(FUNCS), r.choice(FIELDS)
    t, name, res, kind = traceback_py(r, mod, fn, fld)
    ask = r.choice([f"`{name}` started failing after I pulled, can you take a look?",
                    f"CI is red on the {mod} tests again. Any idea what's going on?",
                    f"{name} fails locally for me but passes in CI. Weird.",
                    f"Can you run the {mod} tests? Something in there broke this morning."])
    fix = [f"The handler now requires `{fld}` (added in the last schema change) but the test fixture still posts the old payload. "
           f"I added it to `make_payload()` in tests/conftest.py; the test passes again.",
           f"`{fn}` assumes the record always has `{fld}`, but the factory can create one without it. I made the factory "
           f"set it by default and added an explicit test for the missing case.",
           f"Two tests create the same `{fld}` because the factory sequence resets per module. I switched it to a uuid "
           f"suffix so the unique constraint can't collide.",
           f"The lookup table doesn't have an entry for the new `{fld}` value. I added a default branch with a warning "
           f"log instead of the bare KeyError, plus a test."][kind]
    return [("user_message", ask), ("tool_call", f"bash: python -m pytest {t}::{name} -x -q"), ("tool_result", res),
            ("assistant_message", fix)]


def f_pytest_pass(r, c):
    mod = r.choice(MODS)
    n = r.randint(20, 320)
    dots = "." * min(n, 60)
    res = f"{dots}\n{n} passed, {r.randint(0, 9)} warnings in {r.randint(2, 90)}.{r.randint(10, 99)}s"
    out = [("tool_call", f"bash: python -m pytest tests/{mod} -q"), ("tool_result", res)]
    if r.random() < 0.5:
        out.append(("assistant_message", r.choice(["All green.", f"The {mod} suite passes; the warnings are the usual "
                                                   "deprecation notices from the HTTP client.", "Passing. Committing now.",
                                                   f"Green. The {mod} tests are the slowest part of the run, mostly fixture setup."])))
    return out


def f_js_error(r, c):
    comp, fld = r.choice(COMPONENTS), r.choice(FIELDS)
    line, col = r.randint(10, 180), r.randint(3, 40)
    trace = (f"Uncaught TypeError: Cannot read properties of undefined (reading 'map')\n"
             f"    at {comp} ({comp}.tsx:{line}:{col})\n    at renderWithHooks (react-dom.development.js:16305:18)\n"
             f"    at mountIndeterminateComponent (react-dom.development.js:20074:13)\n"
             f"    at beginWork (react-dom.development.js:21587:16)")
    user = r.choice([f"Getting this in the browser console when I open the page with an empty account:\n\n{trace}",
                     f"QA pasted this from the admin panel:\n\n{trace}\n\nOnly happens right after login."])
    ans = (f"`{comp}` maps over `data.{fld}s` before the query has resolved, so on first render it's undefined. "
           f"I defaulted it to an empty array and added a loading state; the second issue is that the API omits the "
           f"field for new accounts, which I noted in the ticket.")
    return [("user_message", user), ("tool_call", f"read_file web/src/components/{comp}.tsx"),
            ("tool_result", f"export function {comp}({{ data }}: Props) {{\n  const rows = data.{fld}s.map(toRow);\n"
                            f"  if (!rows.length) return <Empty />;\n  return <Table rows={{rows}} />;\n}}"),
            ("assistant_message", ans)]


def f_code_question(r, c):
    mod, fn, fld = r.choice(MODS), r.choice(FUNCS), r.choice(FIELDS)
    q = r.choice([f"What does `{fn}` in app/{mod}/service.py actually do? The name is misleading.",
                  f"Why does `{fn}` take a session argument if it never writes anything?",
                  f"Is `{fn}` safe to call twice for the same {mod[:-1] if mod.endswith('s') else mod} record?"])
    src = (f"def {fn}(session, record, *, dry_run=False):\n    \"\"\"Recompute derived fields for one record.\"\"\"\n"
           f"    existing = session.execute(select(Audit).where(Audit.ref == record.id)).scalars().all()\n"
           f"    if any(a.kind == \"{fn}\" for a in existing):\n        return record\n"
           f"    record.{fld} = _derive(record)\n    if not dry_run:\n        session.add(Audit(ref=record.id, kind=\"{fn}\"))\n"
           f"    return record")
    a = r.choice([f"It recomputes `{fld}` and writes an audit row so it only runs once per record — the session is "
                  f"for that audit insert and the lookup. With `dry_run=True` it skips the insert, which is what the "
                  f"preview endpoint uses.",
                  f"Yes, it's idempotent: it checks the audit table for an earlier `{fn}` entry and returns early. "
                  f"The only side effect is the audit row; `{fld}` is derived from the record itself."])
    return [("user_message", q), ("tool_call", f"read_file app/{mod}/service.py"), ("tool_result", src),
            ("assistant_message", a)]


def f_grep(r, c):
    sym = r.choice(FUNCS + FIELDS)
    n = r.randint(3, 8)
    lines = [f"app/{r.choice(MODS)}/{r.choice(['service', 'api', 'tasks', 'models'])}.py:{r.randint(5, 400)}:    "
             f"{r.choice(['return ', 'x = ', 'if ', 'await '])}{sym}({r.choice(['session', 'payload', 'record', 'ctx'])})"
             for _ in range(n)]
    out = [("tool_call", f"bash: rg -n \"{sym}\" app/"), ("tool_result", "\n".join(lines))]
    if r.random() < 0.5:
        out.insert(0, ("user_message", f"Where else is `{sym}` used? I want to change its signature."))
        out.append(("assistant_message", f"{n} call sites, all passing positional arguments. If you add a keyword-only "
                                         f"parameter with a default, none of them need to change."))
    return out


def f_lint(r, c):
    comp = r.choice(COMPONENTS)
    errs = "\n".join(f"  {r.randint(3, 200)}:{r.randint(1, 40)}  {r.choice(['error', 'warning'])}  "
                     f"{r.choice(['React Hook useEffect has a missing dependency', 'Unexpected any. Specify a different type', 'is assigned a value but never used', 'Prefer const over let'])}  "
                     f"{r.choice(['react-hooks/exhaustive-deps', '@typescript-eslint/no-explicit-any', 'no-unused-vars', 'prefer-const'])}"
                     for _ in range(r.randint(2, 5)))
    res = f"> web@0.0.0 lint\n> eslint src --max-warnings 0\n\n/work/web/src/components/{comp}.tsx\n{errs}\n\n✖ problems found"
    return [("tool_call", "bash: npm run lint"), ("tool_result", res),
            ("assistant_message", r.choice([
                f"Lint fails in {comp}.tsx; fixing the hook dependencies and the stray variable, and the `any` gets a proper type from the API client.",
                f"All of it is in {comp}.tsx. The exhaustive-deps warning is a real bug — the effect reads a stale prop — so I'm fixing that one properly, not silencing it.",
                f"{comp}.tsx again. I'll fix these and add the lint step to the pre-commit hook so they stop reaching CI.",
                f"Mostly mechanical. The only interesting one in {comp}.tsx is the missing dependency; adding it causes a refetch loop, so I'm moving the callback into useCallback first."]))]


MYPY_ERRORS = ['Item "None" of "Optional[Order]" has no attribute "total"  [union-attr]',
               'Argument 1 to "build" has incompatible type "str"; expected "UUID"  [arg-type]',
               'Missing return statement  [return]',
               'Incompatible return value type (got "dict[str, Any]", expected "Receipt")  [return-value]']


def f_mypy(r, c):
    mod = r.choice(MODS)
    errs = "\n".join(f"app/{mod}/{r.choice(['service', 'api', 'schemas'])}.py:{r.randint(5, 300)}: error: "
                     + r.choice(MYPY_ERRORS) for _ in range(r.randint(2, 4)))
    return [("tool_call", f"bash: mypy app/{mod}"), ("tool_result", errs + "\nFound errors in 1 file (checked 41 source files)"),
            ("assistant_message", r.choice([
                "These are real: the Optional one can crash when the order was deleted meanwhile. I'll narrow it with an early return and fix the signatures.",
                f"The {mod} module hasn't been type-checked strictly before, so this is the backlog. Fixing the return types now; the union-attr one hides a genuine None path.",
                "Two of these come from the untyped helper in utils; annotating it fixes them at once. The missing return is a real fall-through.",
                "I'll fix these in a separate commit so the feature diff stays readable."]))]


def f_docker(r, c):
    svc = r.sample(["db", "redis", "minio", "mailhog", "api", "web"], r.randint(2, 4))
    lines = [f"[+] Running {len(svc)}/{len(svc)}"] + [f" ✔ Container {c['repo']}-{s}-1  {r.choice(['Started', 'Running', 'Healthy'])}" for s in svc]
    return [("tool_call", f"bash: docker compose up -d {' '.join(svc)}"), ("tool_result", "\n".join(lines))]


def f_kubectl(r, c):
    ns = r.choice(["prod", "staging", "tools"])
    rows = ["NAME                              READY   STATUS    RESTARTS   AGE"]
    for _ in range(r.randint(3, 6)):
        name = f"{r.choice(['api', 'worker', 'web', 'scheduler'])}-{hx(r, 9)}-{hx(r, 5)}"
        rows.append(f"{name:<34}1/1     {r.choice(['Running', 'Running', 'Running', 'CrashLoopBackOff'])}   "
                    f"{r.randint(0, 6):<10} {r.randint(2, 50)}h")
    out = [("tool_call", f"bash: kubectl -n {ns} get pods"), ("tool_result", "\n".join(rows))]
    if "CrashLoopBackOff" in out[1][1]:
        out.append(("assistant_message", "One pod is crash-looping; its logs show the readiness probe failing while the "
                                         "migrations lock is held. It recovers once the lock is released."))
    return out


def f_sql(r, c):
    mod, fld = r.choice(MODS), r.choice(FIELDS)
    cost_a, rows_ = r.randint(1000, 90000), r.randint(1000, 900000)
    plan = (f"Seq Scan on {mod}  (cost=0.00..{cost_a}.{r.randint(10, 99)} rows={rows_} width={r.randint(40, 300)}) "
            f"(actual time=0.0{r.randint(10, 99)}..{r.randint(200, 2000)}.{r.randint(100, 999)} rows={r.randint(1, 50)} loops=1)\n"
            f"  Filter: ({fld} = 'acme'::text)\n  Rows Removed by Filter: {rows_ - 3}\n"
            f"Planning Time: 0.{r.randint(100, 999)} ms\nExecution Time: {r.randint(200, 2000)}.{r.randint(100, 999)} ms")
    return [("user_message", f"The {mod} listing page is slow for big tenants. Can you check the query?"),
            ("tool_call", f"psql: EXPLAIN ANALYZE SELECT * FROM {mod} WHERE {fld} = 'acme' ORDER BY created_at DESC LIMIT 50;"),
            ("tool_result", plan),
            ("assistant_message", f"Sequential scan on {mod}: there's no index on `{fld}`. A composite index on "
                                  f"({fld}, created_at DESC) serves both the filter and the sort; I'll add it as a "
                                  f"concurrent migration so it doesn't lock the table.")]


def f_review(r, c):
    pr = r.randint(300, 990)
    fn, fld = r.choice(FUNCS), r.choice(FIELDS)
    pts = r.sample([f"- `{fn}` swallows the exception; at least log it with the request id.",
                    f"- The new `{fld}` column needs a backfill before the NOT NULL constraint, or the migration fails on old rows.",
                    "- The test only covers the happy path; add one for the duplicate request.",
                    "- Nit: the helper name says 'get' but it writes to the cache.",
                    "- The retry loop has no jitter; with many workers that's a thundering herd.",
                    "- Nice cleanup in the serializer, much easier to follow."], 3)
    return [("user_message", f"Can you review #{pr}? It's the {r.choice(BRANCH_WORDS)} change."),
            ("tool_call", f"bash: gh pr diff {pr} --patch | head -200"),
            ("tool_result", f"From {hx(r, 40)} Mon Sep 17 00:00:00 2001\nSubject: [PATCH] {r.choice(COMMITS)}\n\n"
                            f" app/{r.choice(MODS)}/service.py | {r.randint(5, 80)} ++++++----\n"
                            f" tests/{r.choice(MODS)}/test_api.py | {r.randint(5, 60)} ++++++\n 2 files changed"),
            ("assistant_message", "Review notes:\n" + "\n".join(pts))]


RENAMES = [("compute_totals", "recalculate_order_totals"), ("sync_stock", "push_stock_levels"),
           ("parse_webhook", "decode_provider_event"), ("merge_carts", "merge_guest_cart_into_user"),
           ("export_rows", "stream_report_rows"), ("dedupe_events", "drop_duplicate_deliveries"),
           ("resolve_tenant", "tenant_from_request"), ("render_receipt", "receipt_html")]


def f_refactor(r, c):
    old, new = r.choice(RENAMES)
    n = r.randint(2, 9)
    return [("user_message", r.choice([f"Rename `{old}` to `{new}`, the current name lies about what it does. Update all callers.",
                                       f"Can we call `{old}` something clearer? `{new}` maybe.",
                                       f"`{old}` → `{new}` please, and fix the docstring while you're there."])),
            ("tool_call", f"edit_file app/{r.choice(MODS)}/service.py (rename {old} -> {new})"),
            ("tool_result", f"Applied edit: {n} replacements in {r.randint(1, 4)} files."),
            ("assistant_message", r.choice([
                f"Renamed; {n} call sites updated and the tests still pass. I left a deprecated alias so queued background jobs with the old name still resolve.",
                f"Done, {n} references. Celery task names are strings, so I kept the registered name unchanged to avoid orphaning queued tasks.",
                f"Renamed across {n} places. One was in a SQL migration comment, which I left alone."]))]


def f_deps(r, c):
    pk = r.sample(["fastapi", "pydantic", "sqlalchemy", "httpx", "celery", "boto3", "structlog", "alembic", "orjson"], 4)
    rows = ["Package      Version  Latest   Type", "------------ -------- -------- -----"]
    for p in pk:
        a, b = r.randint(0, 4), r.randint(0, 30)
        rows.append(f"{p:<12} {a}.{b}.{r.randint(0, 9):<4} {a}.{b + r.randint(1, 4)}.0    wheel")
    return [("tool_call", "bash: pip list --outdated"), ("tool_result", "\n".join(rows)),
            ("assistant_message", r.choice(["Only minor releases; nothing with breaking changes in the changelogs. I'll bundle them into one dependency PR.",
                                            f"`{pk[0]}` has a deprecation we'd hit next major; the rest are trivial. One PR for all of them.",
                                            "Nothing urgent. I'll let Renovate open these on its normal schedule."]))]


def f_logs(r, c):
    svc = r.choice(["api", "worker", "web"])
    lines = []
    for _ in range(r.randint(4, 8)):
        lines.append(f"{r.choice(['INFO', 'INFO', 'WARN', 'ERROR'])} {svc} request_id={hx(r, 12)} "
                     f"{r.choice(['GET /orders', 'POST /webhooks/stripe', 'GET /search', 'PATCH /accounts/me'])} "
                     f"status={r.choice([200, 200, 201, 404, 409, 500])} duration_ms={r.randint(3, 900)}")
    return [("user_message", f"Anything weird in the {svc} logs from the last hour?"),
            ("tool_call", f"bash: kubectl -n prod logs deploy/{svc} --since=1h | tail -n 8"),
            ("tool_result", "\n".join(lines)),
            ("assistant_message", r.choice(["A few 409s from duplicate webhook deliveries — expected, the idempotency check rejects them — and one 500 that is the known null-address bug in shipping.",
                                            "Nothing alarming. The 404s are a crawler hitting old product URLs; the 500 has a request id, I'll pull its trace.",
                                            "Mostly normal traffic. The slow requests are all search with an empty query, which skips the index; worth a guard."]))]


def f_chat(r, c):
    pairs = [("thanks, that's exactly it", "Glad it worked."),
             ("ok cool. grabbing lunch, back in a bit", "Sure — I'll leave the branch as it is."),
             ("nice, that was quicker than I expected", "The test harness did most of the work."),
             ("can you keep the commits small? reviewers are swamped", "Will do — one commit per concern."),
             ("hmm, let me think about that for a moment", "No rush."),
             ("good catch on the null check", "It showed up in the factory data, otherwise I'd have missed it too."),
             ("do you remember why we pinned that dependency?", "The pin came with a comment about a breaking change in "
              "their retry API; it may be safe to lift now, I can check the changelog."),
             ("is there a faster way to run just the unit tests?", "`pytest -m 'not integration'` skips the ones that "
              "need the database; it's about a third of the time.")]
    u, a = r.choice(pairs)
    return [("user_message", u), ("assistant_message", a)]


def f_todo(r, c):
    fn, mod = r.choice(FUNCS), r.choice(MODS)
    return [("note", r.choice([f"TODO({r.choice(PEOPLE)}): `{fn}` still ignores the tenant header on retries; ticket it.",
                               f"Follow-up: the {mod} factory creates records without timestamps, which hides ordering bugs.",
                               f"Open question for the next planning: should `{fn}` move into the {mod} worker?",
                               f"Scratch: the {mod} export is quadratic in the number of line items; profile it on a big tenant."]))]


def f_profile(r, c):
    fn = r.choice(FUNCS)
    rows = "\n".join(f"{r.randint(1, 60):>6}.{r.randint(0, 9)}%  {r.randint(1, 90):>6}.{r.randint(0, 9)}%  "
                     f"{r.choice(FUNCS)} (app/{r.choice(MODS)}/service.py:{r.randint(5, 300)})" for _ in range(5))
    return [("user_message", f"`{fn}` is slow on big tenants. Can you profile it?"),
            ("tool_call", f"bash: py-spy top --pid $(pgrep -f gunicorn | head -1) --nonblocking"),
            ("tool_result", "  %Own   %Total  Function (filename:line)\n" + rows),
            ("assistant_message", r.choice([f"Most of the time is in the ORM loading line items one by one inside `{fn}`. A selectinload on the relationship removes the per-row queries.",
                                            f"`{fn}` spends its time in JSON serialisation of the whole object graph; returning only the fields the page needs cuts it a lot.",
                                            f"Regex compilation inside the loop in `{fn}` — it's recompiled per row. Hoisting it to module level fixes most of it."]))]


def f_ci(r, c):
    run = r.randint(4000, 9999)
    jobs = r.sample(["lint", "typecheck", "unit", "integration", "build-image", "e2e", "migrations-check"], 5)
    status = {j: "✓" for j in jobs}
    bad = r.choice(jobs + [None, None])
    if bad:
        status[bad] = "X"
    res = (f"✓ {c['branch']} CI · run {run}\nTriggered via push about {r.randint(2, 50)} minutes ago\n\nJOBS\n"
           + "\n".join(f"{status[j]} {j} in {r.randint(1, 14)}m{r.randint(0, 59)}s (ID {r.randint(10**9, 2 * 10**9)})" for j in jobs))
    out = [("tool_call", f"bash: gh run view {run}"), ("tool_result", res)]
    if bad:
        out.append(("assistant_message", r.choice([
            f"`{bad}` failed; the log shows a fixture timing out against the shared database container. Re-running once before I dig in.",
            f"The `{bad}` job is red. It's the same ordering-dependent test as before; I'll pin the ordering in the query instead of retrying.",
            f"`{bad}` failed on a network error while downloading a dependency — infrastructure, not our code. Re-triggered."])))
    return out


def f_design(r, c):
    mod = r.choice(MODS)
    q, a = r.choice([
        (f"Should the {mod} export be a background job or stay synchronous?",
         "Background job. It already takes several seconds for big tenants and the request holds a DB connection the whole time; "
         "a job with a download link keeps the API responsive and makes retries possible."),
        (f"Is it worth splitting {mod} into its own service?",
         "Not yet. The module boundary is clean enough in the monolith, and a service would add a network hop and a second deploy "
         "pipeline for no scaling benefit we can measure today."),
        (f"How should we version the {mod} webhook payloads?",
         "Put a schema version field in the payload and keep one previous shape alive for a deprecation window; subscribers can "
         "opt in per endpoint."),
        (f"Do we need optimistic locking on {mod} updates?",
         "Yes for the admin edit form — two support agents editing the same record is exactly the lost-update case. A version "
         "column and a 409 on mismatch is enough.")])
    return [("user_message", q), ("assistant_message", a)]


def f_readme(r, c):
    sec = r.choice(["Local setup", "Running tests", "Troubleshooting", "Architecture overview"])
    return [("user_message", f"The '{sec}' section of the README is out of date, can you refresh it?"),
            ("tool_call", f"edit_file README.md (section '{sec}')"),
            ("tool_result", f"Applied edit: {r.randint(1, 3)} hunks, +{r.randint(5, 30)} -{r.randint(2, 20)} lines."),
            ("assistant_message", f"Rewrote '{sec}': removed the steps for the old bootstrap script, added the make targets "
                                  f"we actually use, and linked the troubleshooting notes for the certificate error on macOS.")]


FILLERS = [(f_ci, 2), (f_design, 2), (f_readme, 1), (f_git_log, 3), (f_git_status, 2), (f_git_diff, 3), (f_pytest_fail, 4), (f_pytest_pass, 3), (f_js_error, 2),
           (f_code_question, 3), (f_grep, 2), (f_lint, 2), (f_mypy, 2), (f_docker, 1), (f_kubectl, 2), (f_sql, 2),
           (f_review, 3), (f_refactor, 2), (f_deps, 1), (f_logs, 2), (f_chat, 3), (f_todo, 2), (f_profile, 1)]

OTHER_BULLETS = ["- Feature work happens on short-lived branches", "- Migrations must stay backwards compatible for one deploy",
                 "- Every new endpoint gets an OpenAPI entry", "- Flaky tests get quarantined with a ticket, not deleted",
                 "- Keep PRs small enough to review in one sitting", "- Prod access goes through the bastion only",
                 "- Incidents get a written postmortem", "- Dana owns the data-export epic",
                 "- Error messages shown to customers go through copy review"]


def filler_unit(r, c, bad):
    fns, ws = zip(*FILLERS)
    seen = c.setdefault("seen", set())
    for attempt in range(400):
        unit = r.choices(fns, ws)[0](r, c)
        if any(hits(t, bad) for _, t in unit):
            continue
        said = [t for k, t in unit if k in ("user_message", "assistant_message", "note")]
        if attempt < 300 and any(t in seen for t in said):
            continue
        seen.update(said)
        return unit
    raise RuntimeError("could not draw clean filler")


# --------------------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------------------
ACKS = ["Got it — {v} for the {noun}.", "Noted: {subj} is {v}. I'll keep that in mind when touching `{file}`.",
        "Understood, {v}. I'll use that in the examples too.", "OK — so {v}. Makes sense."]
CONFIRMS = ["Done — {subj} is {v} now; I updated `{file}`.", "Updated `{file}`: it's {v}. I'll use that from here on.",
            "Got it, {v}. Changed it in `{file}` and in the ops section of the README.",
            "Noted — {v} from now on. The change is in `{file}`."]
INCIDENTS = ["the checkout outage", "last week's incident", "the pager storm on the weekend", "the incident on the 12th",
             "the billing incident"]
TICKETS = ["OPS-412", "PLAT-87", "INFRA-231", "ENG-1290", "OPS-77"]


def initial_unit(r, s, form, cfgval, style):
    v = form
    if style == "decision":
        evs = [("user_message", s["decision"].format(v=v))]
    elif style == "passing":
        evs = [("user_message", s["passing"].format(v=v))]
    elif style == "config":
        intro = r.choice(["Pinning the current config here for reference:", "Current settings, copied from the repo:",
                          "Snapshot of the relevant config before we start:"])
        evs = [("note", f"{intro}\n```\n{s['snippet'].format(cfg=cfgval)}\n```")]
    else:
        head = r.choice(["Notes from the kickoff call:", "Working agreements we settled on today:",
                         "Quick summary of this morning's infra sync:",
                         "Conventions for this repo, so I don't have to repeat them:"])
        items = r.sample(OTHER_BULLETS, 3)
        items.insert(r.randint(0, 3), s["bullet"].format(v=v))
        evs = [(r.choice(["user_message", "note"]), head + "\n" + "\n".join(items))]
    return evs


def update_unit(r, s, w, new, old, mention_old):
    """[(kind, text, states_value)] — states_value False for turns that state no value."""
    subj, noun, f = s["subj"], s["noun"], s["file"]
    alias = r.choice(s["aliases"])
    was = f" (was {old})" if mention_old else ""
    pre, upd = [], None
    if w == "make_it":
        pre = [("user_message", r.choice(["{p} I think we have to revisit {subj}.", "So, {subj}. {p}",
                                          "{p} Can we change {subj}?"]).format(p=s["problem"], subj=subj)),
               ("assistant_message", r.choice(["It's set in `{f}`, one place. What do you want it to be?",
                                               "Makes sense. {S} lives in `{f}` — what should the new value be?"]
                                              ).format(f=f, S=cap(subj)))]
        upd = ("user_message", r.choice(["Let's make it {n}.", "Hmm. Let's make it {n} and revisit next quarter.",
                                         "Let's just make it {n}."]).format(n=new))
    elif w == "change_that":
        pre = [("user_message", f"Quick one about {subj}: {s['problem'] if s['problem'][1:2].isupper() else s['problem'][0].lower() + s['problem'][1:]}"),
               ("assistant_message", f"Want me to change it? It's defined in `{f}`.")]
        upd = ("user_message", r.choice(["Yes — change that to {n}, please.", "Change that to {n}. I cleared it with the team.",
                                         "Please change that to {n}, everywhere it's referenced."]).format(n=new))
    elif w == "bump_it":
        pre = [("user_message", f"{s['problem']} Where is {subj} set?"),
               ("assistant_message", f"In `{f}`; nothing else overrides it.")]
        upd = ("user_message", r.choice(["Bump it to {n}.", "OK, let's bump it to {n} then.",
                                         "Bump it to {n}, we have the headroom."]).format(n=new))
    elif w == "synonym":
        upd = ("user_message", r.choice(["Heads-up: {a} is {n} now.", "FYI, {a} changed to {n} this morning.",
                                         "{A} is {n} as of today, please use that."]).format(a=alias, A=cap(alias), n=new))
    elif w == "not_anymore":
        upd = ("user_message", r.choice(["{N}, not {o} anymore — for the {noun}.",
                                         "Reminder that {subj} is {n}, not {o} anymore.",
                                         "It's {n} now, not {o} anymore ({noun})."]
                                        ).format(N=cap(new), n=new, o=old, noun=noun, subj=subj))
    elif w == "we_are_on":
        upd = ("user_message", r.choice(["We're on {n} now — {subj} was switched over yesterday.",
                                         "FYI we're on {n} now for the {noun}.",
                                         "Heads-up, we're on {n} now ({noun}); the old setup is gone."]
                                        ).format(n=new, subj=subj, noun=noun))
    elif w == "is_the_new":
        upd = ("user_message", r.choice(["{N} is the new {noun}.", "So, {n} is the new {noun} — effective immediately.",
                                         "Just so it's written down: {n} is the new {noun}."]).format(N=cap(new), n=new, noun=noun))
    elif w == "going_forward":
        upd = ("user_message", r.choice(["Going forward, {subj} is {n}.", "Going forward, please treat {n} as {subj}.",
                                         "Going forward: {noun} = {n}."]).format(subj=subj, n=new, noun=noun))
    elif w == "after_incident":
        frm = f" (from {old})" if mention_old else ""
        upd = (r.choice(["user_message", "note"]),
               r.choice(["After {i} we moved {subj} to {n}{frm}.", "Postmortem action item done: after {i} we moved {subj} to {n}{frm}."]
                        ).format(i=r.choice(INCIDENTS), subj=subj, n=new, frm=frm))
    elif w == "update_colon":
        upd = (r.choice(["user_message", "note"]),
               r.choice(["Update: {subj} is now {n}{was}.", "Update: {noun} changed to {n}{was}.", "update: {subj} → {n}{was}"]
                        ).format(subj=subj, noun=noun, n=new, was=was))
    elif w == "ok_then":
        pre = [("user_message", r.choice(["{p} Should we change {subj}?", "{p} I'm wondering whether to change {subj}."]
                                         ).format(p=s["problem"], subj=subj)),
               ("assistant_message", f"I'd change it — {subj} is only set in `{f}`, so it's cheap to switch and easy to "
                                     f"roll back. Which way do you want to go?")]
        upd = ("user_message", r.choice(["ok, {n} then.", "Ok — {n} then. Ship it.", "fine, {n} then."]).format(n=new))
    elif w == "assistant_states":
        pre = [("user_message", r.choice(["{t} got approved — it changes {subj}. Can you apply it and update our notes?",
                                          "Ops signed off on the new {noun} in {t}. Please roll it out and tell me what it is now."]
                                         ).format(t=r.choice(TICKETS), subj=subj, noun=noun))]
        upd = ("assistant_message", r.choice(["Done — {subj} is now {n}{was}. Changed in `{f}`, and the runbook says so too.",
                                              "Applied: {n} is what {subj} is set to now{was}; the change is in `{f}`."]
                                             ).format(subj=subj, n=new, was=was, f=f))
    return [(k, t, False) for k, t in pre] + [(upd[0], upd[1], True)]


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------
def use_text(tpl, v):
    text = tpl.format(v=v)
    return cap(text) if tpl.startswith("{v}") else text


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def build_case(r, idx, s, wording):
    pid = f"ho-{idx:03d}"
    det_old, det_new = compile_det(s)
    bad = det_old + det_new
    c = {"repo": r.choice(["tallyho", "ledgerline", "parcelpost", "bookly", "harbor", "quillpay"]),
         "branch": f"feat/{r.choice(BRANCH_WORDS)}"}
    n_sess = r.randint(3, 6)
    upd_sess = r.randint(max(2, math.ceil(n_sess / 2)), n_sess)  # 1-based
    # value forms
    style = r.choice(["decision", "passing", "config", "bullets"] if s["snippet"] else ["decision", "passing", "bullets"])
    fi = 0 if r.random() < 0.7 or len(s["old"]) == 1 else r.randrange(len(s["old"]))
    if style == "config":
        ui = r.randrange(len(s["new"]))
        value_form = "config"
    elif len(s["new"]) > 1 and r.random() < 0.3:
        ui = r.choice([i for i in range(len(s["new"])) if i != min(fi, len(s["new"]) - 1)])
        value_form = "different"
    else:
        ui = min(fi, len(s["new"]) - 1)
        value_form = "same"
    old_init = s["old"][fi]
    new_upd = s["new"][ui]
    mention_old = wording == "not_anymore" or (wording in ("assistant_states", "after_incident", "update_colon")
                                                 and r.random() < 0.4)
    ack = r.random() < 0.5
    confirmed = wording != "assistant_states" and r.random() < 0.55
    new_use = r.random() < 0.5
    near_miss = r.random() < 0.5
    n_uses = r.randint(1, 3)
    use_tpls = r.sample(s["uses"], min(len(s["uses"]), n_uses + 1))
    old_use_tpls, new_use_tpl = use_tpls[:n_uses], use_tpls[-1] if len(use_tpls) > n_uses else r.choice(s["uses"])

    def ev(kind, text, role, **meta):
        return {"kind": kind, "text": text, "role": role, "meta": meta}

    # special units, each a list of event dicts
    init = [ev(k, t, "initial", states="stale", initial_style=style)
            for k, t in initial_unit(r, s, old_init, s["cfg"][0] if s["cfg"] else None, style)]
    if ack:
        init.append(ev("assistant_message", r.choice(ACKS).format(v=old_init, noun=s["noun"], subj=s["subj"], file=s["file"]),
                       "initial", states="stale"))
    uses = []
    for t in old_use_tpls:
        form = s["old"][fi] if r.random() < 0.75 else r.choice(s["old"])
        uses.append([ev(r.choice(["user_message", "assistant_message", "assistant_message"]), use_text(t, form),
                        "use", states="stale")])
    upd = []
    for k, t, states in update_unit(r, s, wording, new_upd, s["old"][min(fi, len(s["old"]) - 1)], mention_old):
        upd.append(ev(k, t, "update", wording=wording, **({"states": "current"} if states else {})))
    if confirmed:
        upd.append(ev("assistant_message", r.choice(CONFIRMS).format(subj=s["subj"], v=new_upd, file=s["file"]),
                      "update", states="current", wording=wording, confirmation="true"))
    later = [ev(r.choice(["user_message", "assistant_message"]), use_text(new_use_tpl, r.choice(s["new"])),
                "use", states="current")] if new_use else None
    nm = None
    if near_miss:
        nm = [ev("user_message", r.choice(["Where is {subj} configured again?", "Remind me where {subj} is written down?",
                                            "Does anything override {subj} per environment?"]).format(subj=s["subj"]),
                 "filler", near_miss="true"),
              ev("assistant_message", r.choice(["`{f}` — that's the only place it's set.",
                                                "In `{f}`. Nothing overrides it per environment.",
                                                "It's in `{f}`; I grepped and there's no second definition."]
                                               ).format(f=s["file"]), "filler", near_miss="true")]

    for attempt in range(100):
        c["seen"] = set()
        target = r.randint(112, 185)
        sessions = [[] for _ in range(n_sess)]  # lists of units
        per = target / n_sess
        for si in range(n_sess):
            count = 2
            goal = per * r.uniform(0.8, 1.2)
            while count < goal:
                u = [ev(k, t, "filler") for k, t in filler_unit(r, c, bad)]
                sessions[si].append(u)
                count += len(u)
        # place specials
        s1 = sessions[0]
        p0 = r.randint(0, min(3, len(s1)))
        s1.insert(p0, init)
        for u in uses:
            si = r.randrange(0, upd_sess - 1)
            lo = p0 + 1 if si == 0 else 0
            sessions[si].insert(r.randint(lo, len(sessions[si])), u)
        us = sessions[upd_sess - 1]
        pu = r.randint(min(3, len(us)), max(min(3, len(us)), len(us) - 2))
        us.insert(pu, upd)
        if later:
            si = r.randint(upd_sess - 1, n_sess - 1)
            if si == upd_sess - 1:
                pos = r.randint(pu + 2, len(us)) if pu + 2 <= len(us) else len(us)
            else:
                pos = r.randint(0, len(sessions[si]))
            sessions[si].insert(pos, later)
        if nm:
            si = r.randrange(n_sess)
            sessions[si].insert(r.randint(0, len(sessions[si])), nm)
        # flatten
        flat = []
        for si, units in enumerate(sessions):
            flat.append((si, ev("session_start", f"Session started in ~/src/{c['repo']} on branch {c['branch']}.",
                                "filler", git_branch=c["branch"])))
            for u in units:
                for e in u:
                    flat.append((si, e))
            flat.append((si, ev("session_end", r.choice(["Session ended.", "Session ended by user.",
                                                          "Session closed after inactivity."]), "filler")))
        stale_idx = [i for i, (_, e) in enumerate(flat) if e["meta"].get("states") == "stale"]
        upd_idx = [i for i, (_, e) in enumerate(flat) if e["role"] == "update" and e["meta"].get("states") == "current"]
        # order: every stale statement precedes the update (uses may be in later session lists only if earlier)
        if max(stale_idx) > min(upd_idx):
            continue
        turns_between = min(upd_idx) - max(stale_idx)
        if turns_between < 20 or not (120 <= len(flat) <= 200):
            continue
        break
    else:
        raise RuntimeError(f"could not lay out case {pid}")

    # ids and timestamps
    start = dt.datetime(2026, 1, 5, 8, 0, 0) + dt.timedelta(days=r.randint(0, 280), minutes=r.randint(0, 240))
    events, sess_day = [], start
    cur_si, t = -1, start
    for n, (si, e) in enumerate(flat, 1):
        if si != cur_si:
            if cur_si >= 0:
                sess_day = sess_day + dt.timedelta(days=r.randint(2, 8))
                t = sess_day.replace(hour=r.randint(8, 15), minute=r.randint(0, 59), second=r.randint(0, 59))
            cur_si = si
        else:
            prev_kind = flat[n - 2][1]["kind"]
            t = t + dt.timedelta(seconds=r.randint(2, 25) if prev_kind == "tool_call" else r.randint(20, 240))
        meta = {"case": pid, "role_in_case": e["role"]}
        meta.update({k: v for k, v in e["meta"].items()})
        events.append({"event_id": f"{pid}-{n:04d}", "session_id": f"{pid}-s{si + 1}", "project_id": pid,
                       "agent_id": AGENT, "timestamp": iso(t), "kind": e["kind"], "metadata": meta, "text": e["text"]})

    stale = [e["event_id"] for e in events if e["metadata"].get("states") == "stale"]
    current = [e["event_id"] for e in events if e["metadata"].get("states") == "current"]
    update_ids = [e["event_id"] for e in events if e["metadata"]["role_in_case"] == "update" and e["metadata"].get("states") == "current"]
    last = dt.datetime.strptime(events[-1]["timestamp"], "%Y-%m-%dT%H:%M:%SZ")
    question = r.choice(s["questions"])
    q = {"id": pid, "query": question, "project_id": pid, "token_budget": 2000, "limit": 50,
         "now": iso(last + dt.timedelta(minutes=30)), "kind": s["kind"], "subject": s["subj"],
         "old": s["old"][0], "new": s["new"][0], "wording": wording, "value_form": value_form,
         "update_value": new_upd, "update_mentions_old": mention_old, "confirmed": confirmed, "new_use": new_use,
         "near_miss": near_miss, "initial_style": style, "initial_value": old_init, "subject_key": s["key"],
         "sessions": n_sess, "update_session": upd_sess, "events": len(events), "turns_between": turns_between,
         "stale_evidence": stale, "current_evidence": current, "update_ids": update_ids, "set": "heldout"}
    return events, q


def check(events_by_case, queries, subj_by_key):
    """Sanity checks; returns a list of problems (empty when fine)."""
    problems = []
    for q in queries:
        evs = events_by_case[q["project_id"]]
        by_id = {e["event_id"]: e for e in evs}
        s = subj_by_key[q["subject_key"]]
        det_old, det_new = compile_det(s)
        for name, ids, pats in (("stale", q["stale_evidence"], det_old), ("current", q["current_evidence"], det_new)):
            if not ids:
                problems.append(f"{q['id']}: no {name} evidence")
            for i in ids:
                if i not in by_id:
                    problems.append(f"{q['id']}: {name} evidence {i} missing")
                elif not hits(by_id[i]["text"], pats):
                    problems.append(f"{q['id']}: {name} evidence {i} lacks its value: {by_id[i]['text'][:80]!r}")
        for i in q["stale_evidence"]:
            if i in by_id and hits(by_id[i]["text"], det_new):
                problems.append(f"{q['id']}: stale evidence {i} names the new value")
        for i in q["update_ids"]:
            if i not in q["current_evidence"]:
                problems.append(f"{q['id']}: update id {i} not in current evidence")
        ev_ids = set(q["stale_evidence"]) | set(q["current_evidence"])
        for e in evs:
            if e["event_id"] not in ev_ids and hits(e["text"], det_old + det_new):
                problems.append(f"{q['id']}: non-evidence event {e['event_id']} ({e['metadata']['role_in_case']}) names a value")
        if hits(q["query"], det_old + det_new):
            problems.append(f"{q['id']}: question names a value")
        ts = [e["timestamp"] for e in evs]
        if ts != sorted(ts):
            problems.append(f"{q['id']}: timestamps not ordered")
        if q["now"] <= ts[-1]:
            problems.append(f"{q['id']}: now not after last event")
    return problems


def self_test_subjects():
    for s in SUBJECTS:
        det_old, det_new = compile_det(s)
        for f in s["old"]:
            assert hits(f, det_old) and not hits(f, det_new), (s["key"], f)
        for f in s["new"]:
            assert hits(f, det_new) and not hits(f, det_old), (s["key"], f)
        if s["snippet"]:
            a, b = s["snippet"].format(cfg=s["cfg"][0]), s["snippet"].format(cfg=s["cfg"][1])
            assert hits(a, det_old) and not hits(a, det_new), (s["key"], a)
            assert hits(b, det_new) and not hits(b, det_old), (s["key"], b)
        for q in s["questions"]:
            assert not hits(q, det_old + det_new), (s["key"], q)
        for t in [s["problem"]] + s["aliases"] + [s["subj"], s["noun"], s["file"]]:
            assert not hits(t, det_old + det_new), (s["key"], t)


def main():
    ap = argparse.ArgumentParser(description="Held-out knowledge-update cases (independent of generate.py)")
    ap.add_argument("--out", default=os.path.join(HERE, "heldout_data"))
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7127)
    a = ap.parse_args()
    self_test_subjects()
    r = random.Random(a.seed)
    order = SUBJECTS[:]
    r.shuffle(order)
    counts = collections.Counter()
    all_events, queries, by_case = [], [], {}
    for i in range(a.cases):
        s = order[i % len(order)]
        cands = [w for w in WORDINGS if fits(s, w)]
        low = min(counts[w] for w in cands)
        w = r.choice([w for w in cands if counts[w] == low])
        counts[w] += 1
        evs, q = build_case(r, i + 1, s, w)
        all_events.extend(evs)
        queries.append(q)
        by_case[q["project_id"]] = evs
    problems = check(by_case, queries, {s["key"]: s for s in SUBJECTS})
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "events.jsonl"), "w") as f:
        for e in all_events:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
    with open(os.path.join(a.out, "queries.jsonl"), "w") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    ne = [q["events"] for q in queries]
    tb = sorted(q["turns_between"] for q in queries)
    print(f"{len(queries)} cases, {len(all_events)} events (per case {min(ne)}–{max(ne)}), "
          f"turns_between median {tb[len(tb) // 2]} → {a.out}", file=sys.stderr)
    print("wordings: " + ", ".join(f"{w}={counts[w]}" for w in WORDINGS), file=sys.stderr)


if __name__ == "__main__":
    main()
