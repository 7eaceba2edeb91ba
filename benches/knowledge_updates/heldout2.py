#!/usr/bin/env python3
"""Second held-out set for the knowledge-update benchmark (see HELDOUT2.md).

Writes events.jsonl and queries.jsonl in the format score.py reads: one project per case
(h2-001 ...), one team fact stated, used, and later changed, in 3-6 sessions days apart with
120-200 events of coding-agent filler, and one question asking for the current value.

Standard library only, deterministic for a given --seed. Self-checks everything it writes
and exits non-zero when a check fails.

    python3 benches/knowledge_updates/heldout2.py [--seed 771043] [--cases 30] [--out DIR]
"""
import argparse
import collections
import datetime as dt
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "heldout2_data")
DEFAULT_SEED = 771043
SET_NAME = "heldout2"


def fill(template, **kw):
    """Replaces {name} for the names given; leaves every other brace alone (code, JSON)."""
    return re.sub(r"\{(\w+)\}", lambda m: str(kw[m.group(1)]) if m.group(1) in kw else m.group(0), template)


def cap(s):
    return s[:1].upper() + s[1:]


# --------------------------------------------------------------------------------------
# Subjects: 32 team facts. Each value has prose forms (forms[0] is the one uses restate),
# the literal it has in a config file (cfg) and the whole config line (line).
# --------------------------------------------------------------------------------------

def V(forms, cfg=None, line=None):
    return {"forms": forms, "cfg": cfg, "line": line}


SUBJECTS = [
    dict(id="gateway_port", kind="network", vtype="port number",
         subj="the API gateway's listen port", alias="the edge proxy's bind port",
         file="deploy/gateway/.env", key="GATEWAY_PORT", sep="=",
         old=V(["8443"]), new=V(["9443"]),
         snip="# gateway runtime\nGATEWAY_HOST=0.0.0.0\n{L}\nGATEWAY_WORKERS=auto\nGATEWAY_ACCESS_LOG=stdout",
         uses=[[("tool_call", "bash: curl -sk https://localhost:{v}/healthz"), ("tool_result", '{"status":"ok","uptime_s":412}')],
               [("assistant_message", "The e2e suite starts the gateway in a container and publishes {v} to the host, so the Playwright base URL has to use that port too. I adjusted playwright.config.ts.")],
               [("user_message", "the load balancer health check targets {v} and keeps flapping. can you check whether the gateway is actually listening before the TLS cert is loaded?")]],
         questions=["Which port should my local client point at to reach the gateway?",
                    "What port is the edge gateway listening on?"],
         incident="a mesh sidecar grabbed the gateway's port on the new node pool and half the pods crash-looped",
         reason="the mesh sidecar claims the old port on the new node images", team="platform"),
    dict(id="payments_timeout", kind="timeout", vtype="duration", numeric="down",
         subj="the timeout on calls to the payments provider", alias="the Stripe call deadline",
         file="services/billing/config/payments.toml", key="request_timeout", sep=" = ",
         old=V(["45 seconds", "45s"], cfg='"45s"'), new=V(["12 seconds", "12s"], cfg='"12s"'),
         snip='[payments]\nprovider = "stripe"\n{L}\nmax_idle_conns = 32\nidempotency = true',
         uses=[[("assistant_message", "I made the mock provider in the test sleep just past {v} so the timeout branch is actually exercised.")],
               [("user_message", "a customer complained checkout hung for {v} before the error page showed up. is that just our timeout kicking in?")],
               [("assistant_message", "With {v} as the ceiling on the provider call, the checkout handler's own deadline has to be longer, otherwise we cancel before the provider call can fail cleanly.")]],
         questions=["How long does checkout wait for the payment provider before it gives up?"],
         incident="Stripe degraded for twenty minutes on Friday and every checkout worker sat waiting on it",
         reason="long waits on the provider were exhausting the worker pool", team="payments"),
    dict(id="prbot_model", kind="ml", vtype="model name",
         subj="the model the PR summary bot calls", alias="the LLM behind our review summaries",
         file="tools/prbot/settings.py", key="SUMMARY_MODEL", sep=" = ",
         old=V(["gpt-4o-mini"], cfg='"gpt-4o-mini"'), new=V(["claude-haiku-4-5"], cfg='"claude-haiku-4-5"'),
         snip="MAX_DIFF_LINES = 1500\n{L}\nSUMMARY_TEMPERATURE = 0.1\nPOST_AS_COMMENT = True",
         uses=[[("assistant_message", "I trimmed the prompt so a typical diff stays well inside what {v} handles comfortably; the lockfile diffs were the real problem.")],
               [("user_message", "the summary on #812 is weirdly terse, is that {v} being lazy or did we truncate the diff?")],
               [("assistant_message", "Cost for last month: the bot made about 2,300 calls to {v}, mostly on the monorepo.")]],
         questions=["Which model writes the pull request summaries?"],
         incident="the summary bot invented file names on large diffs and two reviewers approved a PR based on it",
         reason="summaries of big diffs were unreliable", team="developer-experience"),
    dict(id="artifacts_bucket", kind="storage", vtype="bucket name",
         subj="the artifacts bucket for CI", alias="the build-output storage bucket",
         file=".github/workflows/build.yml", key="ARTIFACT_BUCKET", sep=": ",
         old=V(["s3://acme-ci-artifacts", "acme-ci-artifacts"]), new=V(["gs://orbit-build-outputs", "orbit-build-outputs"]),
         snip="env:\n  NODE_OPTIONS: --max-old-space-size=4096\n  {L}\n  CACHE_KEY_PREFIX: web-v3",
         uses=[[("assistant_message", "The deploy job pulls the tarball from {v} by commit SHA, so re-running a deploy doesn't rebuild anything.")],
               [("user_message", "can you add a lifecycle note to the runbook? {v} is getting expensive with every PR build sitting in it")],
               [("assistant_message", "I added a step that uploads the coverage HTML next to the bundle in {v} so reviewers can open it from the PR.")]],
         questions=["Where do the CI build artifacts get uploaded?"],
         incident="the AWS account hit its request quota during the release freeze and every pipeline failed at the upload step",
         reason="CI is being consolidated in the GCP org", team="infra"),
    dict(id="webhook_attempts", kind="retries", vtype="count", numeric="up",
         subj="the number of delivery attempts for outgoing webhooks", alias="the webhook redelivery limit",
         file="config/webhooks.yaml", key="max_attempts", sep=": ",
         old=V(["5 attempts", "five attempts"], cfg="5"), new=V(["8 attempts", "eight attempts"], cfg="8"),
         snip="delivery:\n  signing: hmac-sha256\n  {L}\n  backoff: exponential\n  dead_letter: true",
         uses=[[("assistant_message", "With {v} and exponential backoff, a receiver that's down gets its last try hours later; I wrote that into the partner guide.")],
               [("user_message", "partner says they saw {v} for the same event during their outage. that's expected when they return 500s, right?")],
               [("assistant_message", "The retry test now asserts exactly {v} before the event lands in the dead-letter table.")]],
         questions=["How many times do we try to deliver a webhook before dead-lettering it?"],
         incident="a partner's endpoint was down most of Saturday and we dead-lettered thousands of events they later asked us to replay",
         reason="partners with longer outages were losing events", team="integrations"),
    dict(id="prod_log_level", kind="observability", vtype="enum", bare=False,
         subj="the production log level", alias="prod log verbosity",
         file="helm/api/values-prod.yaml", key="LOG_LEVEL", sep=": ",
         old=V(["`warn`", "warn level"], cfg="warn"), new=V(["`info`", "info level"], cfg="info"),
         snip="env:\n  {L}\n  LOG_FORMAT: json\n  OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector:4317",
         uses=[[("assistant_message", "Heads-up: with prod at {v} the new cache-miss messages won't show up there. I made them debug so they don't add noise anywhere.")],
               [("user_message", "prod is on {v} so I can't find the request lines for the 502s in Loki. where else can I look?")],
               [("assistant_message", "Because prod logs at {v}, I kept the payment-failure message at error so on-call actually sees it.")]],
         questions=["How verbose is logging in production?"],
         incident="we debugged a production data-loss bug blind for two days because none of the request context was kept",
         reason="on-call kept missing request context in prod", team="SRE"),
    dict(id="tile_cache_ttl", kind="cache", vtype="duration", numeric="down",
         subj="the Redis TTL for rendered dashboard tiles", alias="the dashboard tile expiry",
         file="analytics/settings.py", key="TILE_CACHE_TTL", sep=" = ",
         old=V(["10 minutes", "600 seconds"], cfg="600"), new=V(["90 seconds", "a minute and a half"], cfg="90"),
         snip="REDIS_URL = env('REDIS_URL')\n{L}  # seconds\nTILE_RENDER_TIMEOUT = 20\nTILE_MAX_ROWS = 5000",
         uses=[[("assistant_message", "The 'stale tile' report is just the cache: a tile can be up to {v} old, and sales refreshed right after the import.")],
               [("user_message", "can the tile header say 'cached, refreshes within {v}'? people keep asking why numbers lag")],
               [("assistant_message", "I made the test's fake clock advance {v} plus one second before asserting that the tile re-renders.")]],
         questions=["How long can a dashboard tile be served from cache before it's rendered again?"],
         incident="finance presented revenue numbers at the board meeting that were behind the actual import",
         reason="people expect tiles to reflect imports almost immediately", team="analytics"),
    dict(id="billing_export_owner", kind="ownership", vtype="person",
         subj="the owner of the billing-export feature", alias="the billing-export approver",
         file=".github/CODEOWNERS", key="/services/billing-export/", sep="   ",
         old=V(["Priya Raman", "Priya"], cfg="@priya-raman"), new=V(["Tomás Ferreira", "Tomás"], cfg="@tferreira"),
         snip="/services/checkout/       @checkout-team\n{L}\n/infra/                   @platform-team\n*.sql                     @dba-guild",
         uses=[[("assistant_message", "I'll tag {v} on the PR, since the CSV column order is a contract with finance.")],
               [("user_message", "{v} wants the export to keep the legacy date format until Q3, so don't 'fix' that")],
               [("assistant_message", "Drafted the migration note for {v} to review; it lists the two columns we renamed.")]],
         questions=["Who should review changes to the billing export?"],
         incident="a billing-export change shipped without sign-off while the owner was on leave and finance got broken CSVs",
         reason="ownership follows the finance-platform reorg", team="finance-platform"),
    dict(id="primary_region", kind="deploy", vtype="region",
         subj="the primary GCP region", alias="the production cluster's location",
         file="infra/terraform/prod.tfvars", key="region      ", sep=" = ",
         old=V(["europe-west4"], cfg='"europe-west4"'), new=V(["europe-west1"], cfg='"europe-west1"'),
         snip='project_id   = "tidepool-prod"\n{L}\nnode_count   = 6\nmachine_type = "n2-standard-8"',
         uses=[[("assistant_message", "Latency from the Lisbon office looks fine; the cluster in {v} is about 40 ms away.")],
               [("user_message", "the Cloud SQL replica has to be in {v} too or we pay egress on every read, right?")],
               [("assistant_message", "I pinned the Artifact Registry repo to {v} so image pulls stay in-region.")]],
         questions=["Which region is the production cluster in?"],
         incident="a zonal outage plus a stockout of n2 machines blocked a scale-up during the spring sale",
         reason="the old region keeps running out of capacity", team="platform"),
    dict(id="api_db_pool", kind="database", vtype="count", numeric="up",
         subj="the Postgres pool size for the API", alias="the per-pod DB connection cap",
         file="config/database.yml", key="pool", sep=": ",
         old=V(["20 connections", "twenty connections"], cfg="20"), new=V(["35 connections", "thirty-five connections"], cfg="35"),
         snip="production:\n  adapter: postgresql\n  {L}\n  checkout_timeout: 5\n  prepared_statements: false",
         uses=[[("assistant_message", "With {v} per pod and 12 pods we stay under the pgbouncer limit, so I left the pooler config alone.")],
               [("user_message", "saw 'could not obtain a connection from the pool' in the worker logs. with {v} per pod that shouldn't happen, what else is holding them?")],
               [("assistant_message", "The load test holds {v} open per pod at peak; p99 only spikes once a queue forms in front of the pool.")]],
         questions=["How many database connections can one API pod open?"],
         incident="sale-day traffic had requests waiting seconds on the connection pool while Postgres sat at a third of its capacity",
         reason="requests were queueing on the pool while the database had headroom", team="backend"),
    dict(id="ruff_line_length", kind="lint", vtype="count", numeric="up",
         subj="the line-length limit in our ruff config", alias="the max width of Python lines",
         file="pyproject.toml", key="line-length", sep=" = ",
         old=V(["100 characters", "100 chars"], cfg="100"), new=V(["120 characters", "120 chars"], cfg="120"),
         snip='[tool.ruff]\ntarget-version = "py312"\n{L}\n\n[tool.ruff.lint]\nselect = ["E", "F", "I", "B"]',
         uses=[[("assistant_message", "I wrapped the long f-string in the exporter; it was just over {v}.")],
               [("user_message", "E501 again on the migration file. the generated SQL strings are way past {v}, can we noqa those?")],
               [("assistant_message", "Reformatted the module: nothing exceeds {v} and the diff is whitespace only.")]],
         questions=["What's the maximum line length the Python linter allows?"],
         incident="the formatter and the linter disagreed on wrapping and the pre-commit hook looped on every commit for a day",
         reason="wrapped SQL and type signatures were unreadable", team="developer-experience"),
    dict(id="ci_image", kind="ci", vtype="image tag",
         subj="the container image our CI jobs run in", alias="the CI runner image",
         file=".gitlab-ci.yml", key="image", sep=": ",
         old=V(["ghcr.io/tidepool/ci-runner:2024.06"]), new=V(["ghcr.io/tidepool/ci-runner:2025.03-slim"]),
         snip="default:\n  {L}\n  interruptible: true\nstages: [lint, test, build]",
         uses=[[("assistant_message", "The runner image {v} ships Python 3.12 and Node 20, which is why the lint job doesn't install anything.")],
               [("user_message", "the test job spends three minutes pulling {v} on cold runners, can we cache it somehow?")],
               [("assistant_message", "I reproduced the failure locally with `docker run --rm -it {v} bash`; the missing libpq headers are the issue.")]],
         questions=["Which image do the CI jobs run in?"],
         incident="a CVE in the runner's OpenSSL got the pipeline blocked by the security scanner for two days",
         reason="the old image was bloated and kept getting flagged by the scanner", team="platform"),
    dict(id="reindex_schedule", kind="schedule", vtype="cron schedule",
         subj="the schedule of the nightly search reindex", alias="the Elasticsearch rebuild time",
         file="k8s/cronjobs/reindex.yaml", key="schedule", sep=": ",
         old=V(["02:00 UTC", "2am UTC"], cfg='"0 2 * * *"'), new=V(["04:30 UTC", "4:30am UTC"], cfg='"30 4 * * *"'),
         snip="spec:\n  {L}\n  concurrencyPolicy: Forbid\n  jobTemplate:\n    spec:\n      backoffLimit: 1",
         uses=[[("assistant_message", "The reindex starts at {v}, so the backup window has to finish before that or they fight over disk IO.")],
               [("user_message", "search results were stale this morning. did the {v} reindex fail? check the cronjob history")],
               [("assistant_message", "I scheduled the synonym-file refresh an hour before the {v} reindex so it's picked up the same night.")]],
         questions=["What time does the nightly search rebuild start?"],
         incident="the reindex collided with the database backup and both jobs ran three times longer than usual",
         reason="it collided with the backup window", team="search"),
    dict(id="frontend_pkg_manager", kind="tooling", vtype="tool name",
         subj="the package manager for the web frontend", alias="the JS dependency installer",
         file="web/package.json", key='"packageManager"', sep=": ",
         old=V(["yarn", "Yarn classic"], cfg='"yarn@1.22.22"'), new=V(["pnpm"], cfg='"pnpm@9.12.0"'),
         snip='{\n  "name": "web",\n  "private": true,\n  {L},\n  "engines": { "node": ">=20" }\n}',
         uses=[[("tool_call", "bash: cd web && {v} install --frozen-lockfile"), ("tool_result", "Done in 41.7s.")],
               [("user_message", "CI says the lockfile is out of date again, did someone run npm instead of {v}?")],
               [("assistant_message", "I added the {v} store directory to the CI cache key so installs take seconds instead of a minute.")]],
         questions=["Which tool should I use to install the frontend dependencies?"],
         incident="phantom dependencies broke the production build when a transitive package got hoisted differently",
         reason="we want strict dependency isolation and faster installs", team="web"),
    dict(id="inventory_orm", kind="library", vtype="library",
         subj="the ORM for the inventory service", alias="the database layer in inventory",
         file="services/inventory/package.json", key="", sep="",
         old=V(["Prisma"], line='"@prisma/client": "^5.14.0"'), new=V(["Drizzle", "drizzle-orm"], line='"drizzle-orm": "^0.33.0"'),
         snip='"dependencies": {\n    "fastify": "^4.28.1",\n    {L},\n    "zod": "^3.23.8"\n  }',
         uses=[[("assistant_message", "The N+1 on the stock-levels endpoint comes from how we call {v} for the warehouse relation; I batched it into one query.")],
               [("user_message", "migrations for the new SKU table: generate them with {v} or hand-write the SQL?")],
               [("assistant_message", "I wrapped the reservation in a {v} transaction so the decrement and the audit row commit together.")]],
         questions=["Which ORM does the inventory service use?"],
         incident="the generated client added seconds of cold start to every Lambda and the reservation endpoint timed out under load",
         reason="the generated client makes cold starts slow", team="inventory"),
    dict(id="admin_idp", kind="auth", vtype="vendor",
         subj="the identity provider for the admin console", alias="admin SSO",
         file="admin/.env.production", key="AUTH_PROVIDER", sep="=",
         old=V(["Auth0"], cfg="auth0"), new=V(["WorkOS"], cfg="workos"),
         snip="ADMIN_BASE_URL=https://admin.tidepool.dev\n{L}\nSESSION_COOKIE_SECURE=true\nAUDIT_LOG=enabled",
         uses=[[("assistant_message", "The callback route for {v} is /auth/callback; I added it to the allowed redirect list in the tenant settings.")],
               [("user_message", "new contractor can't log into the admin console. is she missing from the {v} group?")],
               [("assistant_message", "Logout also calls {v}'s logout endpoint so the session isn't silently restored on the next visit.")]],
         questions=["Who handles sign-in for the admin console?"],
         incident="the SSO tenant's rate limit locked every admin out in the middle of an incident, exactly when we needed access",
         reason="we need SCIM provisioning for enterprise customers", team="security"),
    dict(id="tf_aws_provider", kind="version", vtype="version",
         subj="the pinned version of the AWS Terraform provider", alias="the hashicorp/aws provider pin",
         file="infra/terraform/versions.tf", key="version", sep=" = ",
         old=V(["5.31.0"], cfg='"5.31.0"'), new=V(["5.62.0"], cfg='"5.62.0"'),
         snip='required_providers {\n    aws = {\n      source  = "hashicorp/aws"\n      {L}\n    }\n  }',
         uses=[[("assistant_message", "The lifecycle-configuration drift is a known quirk of provider {v}; the plan shows a no-op change we can ignore.")],
               [("user_message", "terraform init on my machine pulls {v} fine but the Atlantis runner can't. proxy?")],
               [("assistant_message", "I regenerated .terraform.lock.hcl for {v} on linux_amd64 and darwin_arm64 so both platforms verify.")]],
         questions=["Which AWS provider version is Terraform pinned to?"],
         incident="a provider bug corrupted the RDS parameter group in state during an apply and we had to import it by hand",
         reason="the old provider lacks the RDS arguments we need", team="infra"),
    dict(id="public_rate_limit", kind="rate limit", vtype="rate", numeric="up",
         subj="the per-key rate limit on the public API", alias="the API key quota",
         file="gateway/limits.yaml", key="requests_per_minute", sep=": ",
         old=V(["600 requests per minute", "600 rpm"], cfg="600"), new=V(["1,200 requests per minute", "1200 rpm"], cfg="1200"),
         snip="default_plan:\n  {L}\n  burst: 50\n  key_header: X-Api-Key",
         uses=[[("assistant_message", "The SDK honours Retry-After, so a client at {v} backs off cleanly instead of hammering us.")],
               [("user_message", "the partner's nightly sync hits 429s, they send way more than {v} in the first minute")],
               [("assistant_message", "I documented {v} on the pricing page draft and linked the rate-limit headers reference.")]],
         questions=["How many requests per minute does one API key get on the public API?"],
         incident="our biggest customer's sync job was throttled through the whole import window and the escalation reached the CEO",
         reason="enterprise integrations were being throttled", team="api"),
    dict(id="search_embedding_model", kind="ml", vtype="model name",
         subj="the embedding model for semantic search", alias="the vectorizer for search documents",
         file="search/config.yaml", key="embedding_model", sep=": ",
         old=V(["text-embedding-3-small"]), new=V(["nomic-embed-text-v1.5"]),
         snip="vector_store: qdrant\n{L}\nchunk_tokens: 512\nreindex_on_change: true",
         uses=[[("assistant_message", "Chunks of 512 tokens are fine for {v}; the truncation warnings came from the PDF extractor, not the model.")],
               [("user_message", "recall on the legal docs eval is bad. could {v} just be weak on long clauses?")],
               [("assistant_message", "I cached the {v} vectors by content hash so re-running the eval doesn't embed everything again.")]],
         questions=["Which model turns documents into vectors for semantic search?"],
         incident="the embeddings API had a six-hour outage and new documents weren't searchable all day",
         reason="we want to self-host the embeddings", team="ml"),
    dict(id="attachment_limit", kind="limits", vtype="size", numeric="up",
         subj="the max upload size for ticket attachments", alias="the attachment size cap",
         file="deploy/nginx/attachments.conf", key="client_max_body_size", sep=" ",
         old=V(["25 MB", "25MB"], cfg="25m;"), new=V(["100 MB", "100MB"], cfg="100m;"),
         snip="location /api/attachments {\n    {L}\n    proxy_read_timeout 60s;\n    proxy_pass http://attachments;\n}",
         uses=[[("assistant_message", "The upload widget rejects files over {v} client-side, so users don't wait for a 413.")],
               [("user_message", "support wants the error text to mention the {v} cap, right now it just says 'upload failed'")],
               [("assistant_message", "I added a test that posts a file one byte over {v} and expects a 413 with the friendly message.")]],
         questions=["How big can a ticket attachment be?"],
         incident="customers couldn't attach screen recordings during outage triage and support had to collect them over email",
         reason="screen recordings are routinely bigger than the cap", team="support-tools"),
    dict(id="staging_url", kind="environment", vtype="URL",
         subj="the staging URL", alias="the pre-release QA environment",
         file="playwright.config.ts", key="baseURL", sep=": ",
         old=V(["https://staging.tidepool.dev", "staging.tidepool.dev"], cfg="'https://staging.tidepool.dev'"),
         new=V(["https://preview.tidepool.dev", "preview.tidepool.dev"], cfg="'https://preview.tidepool.dev'"),
         snip="export default defineConfig({\n  use: {\n    {L},\n    trace: 'on-first-retry',\n  },\n});",
         uses=[[("tool_call", "bash: curl -sI {v}/login | head -3"), ("tool_result", "HTTP/2 200\ncontent-type: text/html; charset=utf-8\ncache-control: no-store")],
               [("user_message", "QA says {v} shows the old pricing page. is the deploy stuck?")],
               [("assistant_message", "I pointed the smoke test at {v} and it passes; the flake was the cookie banner covering the button.")]],
         questions=["What URL does QA use to test pre-release builds?"],
         incident="the staging certificate expired over a long weekend and nobody could test the hotfix",
         reason="per-branch preview environments replace the shared staging box", team="QA"),
    dict(id="replica_host", kind="database", vtype="hostname",
         subj="the read-replica hostname", alias="the reporting database host",
         file="reporting/.env", key="REPLICA_HOST", sep="=",
         old=V(["pg-replica-2.internal"]), new=V(["pg-ro.db.internal"]),
         snip="PGDATABASE=app\n{L}\nPGPORT=5432\nPGSSLMODE=require",
         uses=[[("tool_call", "bash: psql -h {v} -U reporting -c 'select now() - pg_last_xact_replay_timestamp()'"), ("tool_result", "    ?column?\n-----------------\n 00:00:01.84213\n(1 row)")],
               [("assistant_message", "Replication lag on {v} was about two seconds during the import, so the report can show slightly old rows.")],
               [("user_message", "the nightly report timed out. was {v} under load from the analytics folks again?")]],
         questions=["Which database host should reporting queries go to?"],
         incident="the replica died during the storage migration and the reports kept pointing at a box that no longer existed",
         reason="there is a load-balanced read endpoint", team="data"),
    dict(id="bcrypt_rounds", kind="security", vtype="count", numeric="up",
         subj="the bcrypt cost factor for password hashes", alias="the password hashing work factor",
         file="auth/settings.py", key="BCRYPT_ROUNDS", sep=" = ",
         old=V(["cost 10", "a cost of 10"], cfg="10"), new=V(["cost 12", "a cost of 12"], cfg="12"),
         snip="PASSWORD_HASHER = 'bcrypt'\n{L}\nSESSION_IDLE_MINUTES = 30\nLOCKOUT_AFTER = 5",
         uses=[[("assistant_message", "At {v} a single hash takes a noticeable slice of a request on the API pods, so the login endpoint's p95 is mostly hashing.")],
               [("user_message", "the test suite spends ages in user fixtures. can tests skip {v} and use something cheap?")],
               [("assistant_message", "The rehash-on-login path compares each stored hash against {v} and rehashes when they differ.")]],
         questions=["What bcrypt work factor do we hash passwords with?"],
         incident="the pen-test report flagged our password hashing as too cheap for current hardware",
         reason="the pen test said hashing was too cheap", team="security"),
    dict(id="coverage_gate", kind="ci", vtype="percentage", numeric="down",
         subj="the coverage gate in CI", alias="the minimum coverage for PRs",
         file="codecov.yml", key="target", sep=": ",
         old=V(["80%", "80 percent"], cfg="80%"), new=V(["72%", "72 percent"], cfg="72%"),
         snip="coverage:\n  status:\n    project:\n      default:\n        {L}\n        threshold: 1%",
         uses=[[("assistant_message", "The PR sits just under {v} because the new CLI entry point has no tests; I added two for the argument parsing.")],
               [("user_message", "can we exclude the generated protobuf code? it drags us below {v} every time")],
               [("assistant_message", "Coverage on this branch is 83.4%, above {v}, so the gate will pass.")]],
         questions=["What test coverage does a pull request need to pass CI?"],
         incident="the gate blocked an urgent security fix for half a day because the patch touched untested legacy code",
         reason="the gate was blocking urgent fixes in legacy modules", team="developer-experience"),
    dict(id="py_formatter", kind="tooling", vtype="tool name",
         subj="the Python formatter", alias="the code formatter in pre-commit",
         file=".pre-commit-config.yaml", key="", sep="",
         old=V(["Black"], line="- id: black"), new=V(["ruff format", "ruff's formatter"], line="- id: ruff-format"),
         snip="repos:\n  - repo: local\n    hooks:\n      {L}\n      - id: check-yaml",
         uses=[[("assistant_message", "{v} reflowed the dict literals in the migration; that's why the diff looks bigger than it is.")],
               [("user_message", "my editor formats on save with something else and fights {v}. what setting do you use?")],
               [("assistant_message", "I ran {v} over the tests folder in a separate commit so the real change stays reviewable.")]],
         questions=["Which formatter do we run on Python code?"],
         incident="the formatter and isort kept rewriting each other's output and CI failed on a clean checkout",
         reason="we want one tool instead of three", team="developer-experience"),
    dict(id="email_dlq", kind="queue", vtype="queue name",
         subj="the dead-letter queue for email jobs", alias="the failed-email queue",
         file="workers/email/queues.py", key="DEAD_LETTER_QUEUE", sep=" = ",
         old=V(["email-dlq"], cfg='"email-dlq"'), new=V(["mailer.failed.v2"], cfg='"mailer.failed.v2"'),
         snip='MAIN_QUEUE = "email"\n{L}\nVISIBILITY_TIMEOUT = 120\nMAX_RECEIVES = 4',
         uses=[[("tool_call", "bash: ./scripts/queue-depth.sh {v}"), ("tool_result", "messages=1412 in_flight=0 oldest_age=3d4h")],
               [("assistant_message", "Most of what's sitting in {v} are bounces from the same domain; I grouped them by SMTP code in the report.")],
               [("user_message", "can you write a replay script that drains {v} back into the main queue, rate limited?")]],
         questions=["Where do email jobs go when they fail for good?"],
         incident="the dead-letter queue filled up during the SES suspension and we couldn't tell which sends to replay",
         reason="we need versioned payloads for replay", team="messaging"),
    dict(id="flag_provider", kind="vendor", vtype="vendor",
         subj="the feature-flag service", alias="our flag vendor",
         file="web/src/flags/client.ts", key="provider", sep=": ",
         old=V(["LaunchDarkly"], cfg="'launchdarkly'"), new=V(["Unleash"], cfg="'unleash'"),
         snip="export const flagConfig = {\n  {L},\n  streaming: true,\n  defaultOnError: false,\n};",
         uses=[[("assistant_message", "I wrapped the {v} client so tests get a static flag map instead of a network call.")],
               [("user_message", "the checkout flag flipped in {v} but the app didn't notice for ages. is streaming off?")],
               [("assistant_message", "Flags are evaluated server-side through {v} first, so the page never flashes the old layout.")]],
         questions=["Which service do we use for feature flags?"],
         incident="the flag vendor's SDK outage made every flag fall back to off and checkout hid the new payment options",
         reason="we want to cut cost and self-host", team="web"),
    dict(id="raw_log_retention", kind="retention", vtype="duration", numeric="up",
         subj="the retention of raw request logs", alias="the raw-log lookback window",
         file="observability/loki-values.yaml", key="retention_period", sep=": ",
         old=V(["14 days", "two weeks"], cfg="336h"), new=V(["30 days", "thirty days"], cfg="720h"),
         snip="limits_config:\n  {L}\n  max_query_series: 5000\ncompactor:\n  retention_enabled: true",
         uses=[[("assistant_message", "I told the customer we can only look back {v} in the raw logs; beyond that we only have aggregates.")],
               [("user_message", "legal asked how long we hold IPs in request logs. it's {v}, right?")],
               [("assistant_message", "Storage forecast: at {v} the Loki bucket stays under 2 TB with today's traffic.")]],
         questions=["How far back can we look in the raw request logs?"],
         incident="a fraud investigation needed request logs from three weeks back and they were already gone",
         reason="investigations need a longer lookback", team="SRE"),
    dict(id="celery_concurrency", kind="workers", vtype="count", numeric="up",
         subj="the Celery worker concurrency", alias="the per-pod task parallelism",
         file="deploy/worker/Procfile", key="", sep="",
         old=V(["4 worker processes", "four worker processes"], cfg="--concurrency=4",
               line="worker: celery -A app worker --concurrency=4 -Q default"),
         new=V(["16 worker processes", "sixteen worker processes"], cfg="--concurrency=16",
               line="worker: celery -A app worker --concurrency=16 -Q default"),
         snip="web: gunicorn app.wsgi -w 3\n{L}\nbeat: celery -A app beat",
         uses=[[("assistant_message", "With {v} per pod the PDF renders queue behind each other; each one pins a CPU for several seconds.")],
               [("user_message", "memory on the worker pods creeps up. with {v} each holding a headless Chrome, is that just expected?")],
               [("assistant_message", "The autoscaler math assumes {v} per pod, so the queue-length target is per process, not per pod.")]],
         questions=["How many tasks does each Celery worker run in parallel?"],
         incident="the invoice queue backed up for three hours at month-end while the worker pods sat mostly idle on IO",
         reason="the tasks are IO-bound", team="backend"),
    dict(id="search_latency_slo", kind="slo", vtype="duration", numeric="up",
         subj="the p95 latency target for search", alias="the search latency SLO",
         file="slo/search.yaml", key="threshold", sep=": ",
         old=V(["300 ms", "300ms"], cfg="300ms"), new=V(["450 ms", "450ms"], cfg="450ms"),
         snip="slo:\n  name: search-latency\n  objective: 99.5\n  indicator:\n    percentile: 95\n    {L}",
         uses=[[("assistant_message", "The new facet query adds about 40 ms, which keeps us inside {v} on the benchmark set.")],
               [("user_message", "grafana shows p95 going over {v} every morning at nine. cache warmup?")],
               [("assistant_message", "I made the load test fail when p95 exceeds {v} so regressions show up before deploy.")]],
         questions=["What's the p95 latency objective for search?"],
         incident="the SLO burned its monthly error budget in a week once the personalization stage went live",
         reason="personalization adds latency we can't avoid", team="search"),
    dict(id="openapi_path", kind="path", vtype="file path",
         subj="the path of the OpenAPI spec", alias="the API contract file's location",
         file="Makefile", key="SPEC", sep=" := ",
         old=V(["docs/openapi.yaml"]), new=V(["api/spec/openapi.v2.yaml"]),
         snip="{L}\n\ngen-client:\n\topenapi-generator-cli generate -i $(SPEC) -g typescript-fetch -o web/src/api",
         uses=[[("tool_call", "bash: npx @redocly/cli lint {v}"), ("tool_result", "Woohoo! Your API description is valid. 🎉\n2 warnings")],
               [("assistant_message", "I added the /exports endpoint to {v} and regenerated the TypeScript client from it.")],
               [("user_message", "the docs site renders an outdated version of {v}. is the publish step caching it?")]],
         questions=["Where's the OpenAPI spec file in the repo?"],
         incident="two copies of the spec drifted apart and the generated client shipped with a wrong field type",
         reason="the versioned API lives in its own folder", team="api"),
    dict(id="mobile_release_manager", kind="ownership", vtype="person",
         subj="the release manager for the mobile app", alias="the person who approves App Store submissions",
         file="docs/RELEASING.md", key="Release manager:", sep=" ",
         old=V(["Dana Okafor", "Dana"], cfg="Dana Okafor (@dokafor)"), new=V(["Leif Andersson", "Leif"], cfg="Leif Andersson (@leifa)"),
         snip="## Mobile releases\n\n{L}\nCadence: every other Thursday\nChecklist: docs/mobile-checklist.md",
         uses=[[("assistant_message", "I'll leave the TestFlight notes for {v} to approve before the build goes to review.")],
               [("user_message", "{v} asked that we freeze string changes two days before submission, add that to the checklist?")],
               [("assistant_message", "Pinged {v} about the crash on iOS 17.4 since it blocks the submission.")]],
         questions=["Who signs off on the mobile app's store submissions?"],
         incident="a submission sat unapproved for a week while the release manager was on leave",
         reason="the current release manager is moving to the platform team", team="mobile"),
]


def line_of(s, val):
    if val["line"]:
        return val["line"]
    return s["key"] + s["sep"] + (val["cfg"] if val["cfg"] is not None else val["forms"][0])


def cfg_of(val):
    return val["cfg"] if val["cfg"] is not None else val["forms"][0]


def all_forms(s, val):
    out = list(val["forms"]) + [line_of(s, val)]
    c = val["cfg"]
    if c and s.get("bare", True) and not re.fullmatch(r"\d{1,3}", c):
        out.append(c)
    return out


def value_regex(forms):
    parts = ["(?<![A-Za-z0-9])" + re.escape(f) + "(?![A-Za-z0-9])" for f in sorted(set(forms), key=len, reverse=True)]
    return re.compile("|".join(parts), re.I)


# --------------------------------------------------------------------------------------
# Initial statements (six styles), acknowledgements, confirmations, near misses
# --------------------------------------------------------------------------------------

INITIAL_STYLES = ["decision", "in_passing", "assistant_explains", "config_snippet", "bullet_list", "tool_output"]

DECISION = [
    "Let's settle this so we stop going back and forth: {S} is {v}. Put it in {file} when you get there.",
    "Decision from this morning's design review: {v} for {S}. Nobody wants it configurable per environment yet.",
    "We'll go with {v} as {S}. If the tests assume something else, the tests are wrong.",
]
IN_PASSING = [
    "Quick context before you touch {file2}: {S} is {v}, which is why some of the code around it looks defensive. The actual ask: {task}.",
    "btw {S} is {v} everywhere, in case that matters for the fixtures. anyway, {task}",
    "Background you'll need: {S} is {v} and has been since the platform migration. What I need today is to {task}.",
]
EXPLAIN_Q = [
    "How is {S} set up in this repo? I'm new to this part.",
    "Before I change anything: what's {S} here, and where does it come from?",
]
EXPLAIN_A = [
    "{Sc} is {v}. It comes from this line in `{file}`: `{line}`, and nothing overrides it per environment as far as I can see.",
    "It's {v}. I checked `{file}` (`{line}`) and grepped for overrides in the deploy manifests; there are none, so every environment runs with that.",
]
SNIPPET = [
    "Here's the relevant part of {file} so you don't have to go looking:\n\n```\n{snip}\n```\n\nThat's what every environment runs.",
    "pasting {file} for context:\n```\n{snip}\n```\nkeep that in mind for the {func} work",
]
BULLETS = [
    "House rules for this repo, keep them in mind:\n- {r1}\n- {Sn}: {v}\n- {r2}\n- {r3}",
    "Some things you should know before we start:\n* {r1}\n* {r2}\n* {S} is {v}\n* {r3}",
]
RULES = [
    "conventional commit messages (feat:, fix:, chore:)", "no force-pushes to shared branches",
    "every bug fix comes with a regression test", "keep PRs small enough to review in one sitting",
    "migrations get a review from someone on the data team", "never log request bodies",
    "user-visible changes go behind a feature flag", "prefer composition over inheritance, seriously",
    "run the full test suite before asking for review", "no new dependencies without a short justification in the PR",
]
TASKS = [
    "add a regression test for the empty-cart case", "figure out why the {func} test is flaky on CI",
    "rename {func} to something less confusing", "split {file2} into two modules",
    "make the error message in {func} say what the caller should do", "remove the dead branch in {func}",
]
ACK_ASSISTANT = [
    "Got it: {v} for {S}. I'll keep that in mind.",
    "Noted, {S} is {v}. I'll make the tests use that too.",
    "OK, I'll assume {v} for {S} everywhere.",
]
ACK_USER = ["ok so {v}, good to know", "right, {v}. thanks", "makes sense, {v} then"]
ACK_TOOL = [
    "So {S} is {v} in this file. That matches what the tests assume.",
    "The file sets {S} to {v}; nothing else in the repo overrides it.",
]
CONFIRM_EDIT = [
    "Got it, {v} for {S}. I updated {file} and the table in the README.",
    "Noted: {S} is {v}. I changed {file} to match and grepped for other references; there were none.",
    "Updated {file} (`{line}`) and reran the suite, all green.",
    "Done. {Sc} is {v} in {file}; I also fixed the fixture that hard-coded it.",
]
CONFIRM_ACK = [
    "Got it, {v} for {S}. I'll use that from here on.",
    "OK: {S} is {v}. I'll adjust the two tests that assumed otherwise.",
    "Understood, {v}. The runbook entry for {S} needs the same edit; I'll do it in this branch.",
]
EDIT_CONFIRM_WORDINGS = {"plain_state", "synonym_subject", "buried_in_list", "self_correction", "adr_note", "review_applied"}
NEAR_MISS = [
    ("user_message", "Where do we configure {S} again? I always forget."),
    ("assistant_message", "I didn't touch {S} in this change; the diff only affects {func} and its tests."),
    ("user_message", "let's not change {S} as part of this refactor, keep the PR small"),
    ("assistant_message", "Nothing in this PR depends on {S}, so I left it out of the description."),
]
NEAR_MISS_REPLY = "It lives in `{file}`; nothing overrides it at runtime."


# --------------------------------------------------------------------------------------
# Update wordings (13)
# --------------------------------------------------------------------------------------

WORDINGS = ["plain_state", "synonym_subject", "agent_edit", "incident_followup", "propose_then_confirm",
            "buried_in_list", "self_correction", "upstream_pull", "commit_log", "adr_note",
            "review_applied", "question_presupposes", "scaled"]

BURIED_ITEMS = [
    "the flaky {func} test needs a quarantine label until someone has time for it",
    "{p1} is out Thursday and Friday, so reviews go to {p2}",
    "please stop merging on red, even for docs-only PRs",
    "the design doc for CSV exports is up for comments",
    "we're skipping the retro this week",
    "the staging database gets wiped on Sunday night, don't keep anything there",
    "{p1} wants a short write-up of the {func} bug for the newsletter",
]


def upd_events(w, c, r, want_confirm=False):
    """Events of one update: list of (kind, text, states) with states 'current' or None;
    returns (events, repr, intrinsic_confirm)."""
    E = []
    if w == "plain_state":
        t = r.choice([
            "Context for the ticket you're picking up: {S} is {v}. The failing test is {testfile}, start there.",
            "fyi {S}: {v}. ops confirmed it on the call, use that in the fixture too.",
            "{Sc} is {v}. Please write the runbook section with that.",
        ])
        E.append(("user_message", fill(t, **c), "current"))
        return E, c["vi"], False
    if w == "synonym_subject":
        t = r.choice([
            "Ops set {A} to {v} over the weekend.",
            "Heads-up: {A} got changed to {v} in yesterday's maintenance window.",
            "We went with {v} for {A}; that came out of Tuesday's planning.",
        ])
        E.append(("user_message", fill(t, **c), "current"))
        return E, c["vi"], False
    if w == "agent_edit":
        E.append(("user_message", fill(r.choice([
            "Can you take {tkt}? It's the {A} change from the review, the details are in the ticket.",
            "{tkt} is assigned to you now, it's about {S}. Should be a one-liner.",
        ]), **c), None))
        E.append(("tool_call", fill("bash: gh issue view {tkt} --json title,body", **c), None))
        E.append(("tool_result", fill('{"title":"Config: {A}","body":"Per the review, {S} should be {v}. {Reason}.\\nFile: {file}"}', **c), "current"))
        E.append(("tool_call", fill("Edit {file}\n- {line_old}\n+ {line_new}", **c), "current"))
        E.append(("tool_result", fill("The file {file} has been updated.", **c), None))
        E.append(("assistant_message", fill(r.choice([
            "Done: `{file}` has `{line_new}`, so {S} is {v}. The config tests pass.",
            "Applied {tkt}. {Sc} is {v} in `{file}`; I also updated the sample in the README.",
        ]), **c), "current"))
        return E, "cfg", True
    if w == "incident_followup":
        t = r.choice([
            ("user_message", "Postmortem for {inc} is published. Root cause: {incident}. The action item is done: {S} is {v}."),
            ("user_message", "After last week's page ({incident}) we set {S} to {v}. That's what prod runs."),
            ("note", "Incident {inc} follow-up. What happened: {incident}. Remediation shipped: {S} is {v}."),
        ])
        E.append((t[0], fill(t[1], **c), "current"))
        return E, c["vi"], False
    if w == "propose_then_confirm":
        E.append(("user_message", fill(r.choice([
            "I've been thinking about {S}: {reason}. Can you align it with what the {team} team runs and apply it here too?",
            "{Sc} doesn't match the {team} team's setup anymore, and {reason}. Could you check what they use and make ours the same?",
        ]), **c), None))
        E.append(("assistant_message", fill(r.choice([
            "Checked the {team} team's config: they use {v}. I set {S} to {v} in `{file}` and the tests still pass.",
            "Their repo has {v}, so ours is {v} as well now (`{file}`). Nothing else referenced the setting.",
        ]), **c), "current"))
        return E, c["vi"], True
    if w == "buried_in_list":
        items = c["items"]
        t = r.choice([
            "A few things from today's sync, no particular order:\n\n1. {i1}\n2. {i2}\n3. {S} is {v} going forward; {reason}.\n4. {i3}\n\nNone of it is urgent except 2.",
            "Long day, sorry for the wall of text. First, {i1}. Second, {i2}. Also {S} became {v} in the planning meeting, so take that into account wherever it shows up. And {i3}. That's all.",
        ])
        E.append(("user_message", fill(t, i1=items[0], i2=items[1], i3=items[2], **c), "current"))
        return E, c["vi"], False
    if w == "self_correction":
        t = r.choice([
            "Correction to what I said about {S}: it's {v}, not {old}. I was reading an outdated config when I told you that.",
            "Scratch {old} for {S}, it's {v}. {Reason}.",
        ])
        E.append(("user_message", fill(t, **c), "current"))
        return E, c["vi"], False
    if w == "upstream_pull":
        E.append(("tool_call", fill("bash: git pull --rebase -q && cat {file}", **c), None))
        E.append(("tool_result", c["snip_new"], "current"))
        rep = "cfg"
        E.append(("assistant_message", fill(r.choice([
            "Note that `{file}` on main has {v} for {S}; it came in with {p1}'s merge this morning, so I'll use that.",
            "After the pull, {S} is {v} (from {p1}'s commit {sha}). I rebased the branch on top of it.",
        ]), **c), "current"))
        return E, rep, True
    if w == "commit_log":
        E.append(("tool_call", "bash: git log --oneline -6 origin/main", None))
        lines = list(c["log_lines"])
        lines.insert(r.randint(0, 2), fill("{sha} chore(config): use {v} for {A} ({tkt})", **c))
        E.append(("tool_result", "\n".join(lines), "current"))
        E.append(("user_message", r.choice(["yep, the config one is mine, rebase on it",
                                            "the chore(config) commit is from me, sorry for not saying anything"]), None))
        return E, c["vi"], False
    if w == "adr_note":
        E.append(("note", fill("ADR-{adr}: {Sc}\nStatus: accepted ({date})\nDecision: {v}\nContext: {reason}.\n"
                               "Consequences: dashboards and docs that mention the previous setting need a pass.", **c), "current"))
        return E, c["vi"], False
    if w == "review_applied":
        E.append(("user_message", fill(r.choice([
            "Review from {p1} on #{pr}: \"{S} should be {v}, {reason}.\" Agree, please apply it.",
            "{p1} left one blocking comment on #{pr}: {S} → {v}. Fine by me, go ahead.",
        ]), **c), "current"))
        return E, c["vi"], False
    if w == "question_presupposes":
        E.append(("user_message", fill(r.choice([
            "Since we're on {v} for {S} these days, is the retry wrapper in {file2} still needed?",
            "Given {S} is {v} since the migration, do we still need the workaround in {func}?",
        ]), **c), "current"))
        if want_confirm:
            E.append(("assistant_message", fill("I'd keep it. Even with {S} at {v}, the wrapper also covers DNS failures and connection resets.", **dict(c, v=c["v0"])), "current"))
            return E, c["vi"], True
        E.append(("assistant_message", fill("I'd keep it: it also covers DNS failures and connection resets, which have nothing to do with {S}.", **c), None))
        return E, c["vi"], False
    if w == "scaled":
        verb, adj = ("raised", "low") if c["dir"] == "up" else ("lowered", "high")
        t = r.choice([
            "{Sc} was too {adj} for what we actually need, so I {verb} it to {v}.",
            "Tweaked {S}: {verb} to {v} in {file}, reasoning is in the PR description.",
        ])
        E.append(("user_message", fill(t, verb=verb, adj=adj, **c), "current"))
        return E, c["vi"], False
    raise ValueError(w)


def wording_fits(w, s):
    if w == "scaled":
        return bool(s.get("numeric"))
    return True


# --------------------------------------------------------------------------------------
# Filler: a coding-agent session's ordinary traffic
# --------------------------------------------------------------------------------------

PEOPLE = ["Marta", "Jonas", "Aiko", "Sam", "Noor", "Felipe", "Ines", "Kwame", "Hannah", "Ravi", "Olga", "Chen", "Bruno", "Yusuf"]

PROJECTS = [
    dict(name="ledger", lang="python", files=["app/api/invoices.py", "app/services/tax.py", "app/models/customer.py", "app/workers/reminders.py", "app/api/deps.py"],
         tests=["tests/test_invoices.py", "tests/test_tax.py", "tests/test_reminders.py"],
         funcs=["compute_tax", "render_invoice", "apply_credit", "send_reminder", "parse_vat_id", "close_period"],
         test_cmd="pytest -q", lint_cmd="ruff check app tests", type_cmd="mypy app", area=["invoices", "tax", "reminders", "api"]),
    dict(name="storefront", lang="ts", files=["src/components/CartDrawer.tsx", "src/lib/api.ts", "src/pages/checkout.tsx", "src/hooks/useSession.ts", "src/utils/money.ts"],
         tests=["tests/cart.spec.ts", "tests/money.spec.ts", "tests/session.spec.ts"],
         funcs=["formatPrice", "useCart", "fetchProduct", "applyCoupon", "mergeCarts", "restoreSession"],
         test_cmd="npx vitest run", lint_cmd="npx eslint src", type_cmd="npx tsc --noEmit", area=["cart", "checkout", "session", "ui"]),
    dict(name="relay", lang="go", files=["internal/queue/consumer.go", "internal/http/handler.go", "cmd/relay/main.go", "internal/store/postgres.go", "internal/sign/hmac.go"],
         tests=["internal/queue/consumer_test.go", "internal/http/handler_test.go", "internal/sign/hmac_test.go"],
         funcs=["HandleDelivery", "Ack", "NewConsumer", "retryAfter", "parseHeaders", "VerifySignature"],
         test_cmd="go test ./...", lint_cmd="golangci-lint run", type_cmd="go vet ./...", area=["queue", "http", "store", "sign"]),
    dict(name="indexer", lang="rust", files=["src/shard.rs", "src/merge.rs", "src/tokenize.rs", "src/main.rs", "src/wal.rs"],
         tests=["tests/merge.rs", "tests/tokenize.rs", "tests/wal.rs"],
         funcs=["merge_segments", "tokenize", "open_shard", "flush", "compact", "replay_wal"],
         test_cmd="cargo test", lint_cmd="cargo clippy -- -D warnings", type_cmd="cargo check", area=["merge", "wal", "tokenize", "shard"]),
    dict(name="console", lang="python", files=["console/views/users.py", "console/forms.py", "console/audit.py", "console/permissions.py", "console/templatetags/badges.py"],
         tests=["console/tests/test_users.py", "console/tests/test_audit.py", "console/tests/test_permissions.py"],
         funcs=["deactivate_user", "record_audit", "can_impersonate", "export_users", "badge_for"],
         test_cmd="python manage.py test console", lint_cmd="ruff check console", type_cmd="mypy console", area=["users", "audit", "perms", "admin"]),
    dict(name="mobile-bff", lang="ts", files=["src/routes/feed.ts", "src/routes/profile.ts", "src/services/push.ts", "src/plugins/auth.ts", "src/db/queries.ts"],
         tests=["test/feed.test.ts", "test/push.test.ts", "test/auth.test.ts"],
         funcs=["buildFeed", "sendPush", "verifyToken", "loadProfile", "paginate", "dedupeItems"],
         test_cmd="npm test", lint_cmd="npm run lint", type_cmd="npx tsc -p . --noEmit", area=["feed", "push", "auth", "profile"]),
]

COMMIT_MSGS = [
    "fix: handle empty input in {func}", "refactor({area}): split {func} into smaller helpers", "test({area}): cover the error path of {func}",
    "feat({area}): expose {func} in the public module", "docs: explain the {area} flow", "ci: cache dependencies between jobs",
    "chore: bump dev dependencies", "perf({area}): avoid a copy in {func}", "fix({area}): off-by-one in pagination",
    "style: apply formatter", "fix: race between shutdown and flush", "feat({area}): structured errors from {func}",
]


def sha(r):
    return "".join(r.choice("0123456789abcdef") for _ in range(7))


def code_snippet(r, P, f):
    lang = P["lang"]
    if lang == "python":
        return r.choice([
            f"def {f}(items, *, strict=False):\n    \"\"\"Return the normalized rows, skipping blanks unless strict.\"\"\"\n    out = []\n    for item in items:\n        if not item:\n            if strict:\n                raise ValueError(\"blank row\")\n            continue\n        out.append(normalize(item))\n    return out",
            f"class {cap(f.split('_')[0])}Service:\n    def __init__(self, repo, clock):\n        self.repo = repo\n        self.clock = clock\n\n    def {f}(self, account_id):\n        account = self.repo.get(account_id)\n        if account is None:\n            raise NotFound(account_id)\n        return account.snapshot(self.clock.now())",
            f"@router.post(\"/{f.replace('_', '-')}\")\nasync def {f}(payload: Payload, db: Session = Depends(get_db)):\n    row = await db.get(Model, payload.id)\n    if row is None:\n        raise HTTPException(status_code=404)\n    row.touch()\n    await db.commit()\n    return row",
        ])
    if lang == "ts":
        return r.choice([
            f"export function {f}(items: Item[], opts: Options = {{}}): Result {{\n  if (items.length === 0) return {{ ok: true, value: [] }};\n  const seen = new Set<string>();\n  const value = items.filter((i) => !seen.has(i.id) && seen.add(i.id));\n  return {{ ok: true, value }};\n}}",
            f"export async function {f}(id: string): Promise<Profile | null> {{\n  const res = await client.get(`/profiles/${{id}}`);\n  if (res.status === 404) return null;\n  if (!res.ok) throw new ApiError(res.status, await res.text());\n  return res.json();\n}}",
            f"export const {f} = (state: State, action: Action): State => {{\n  switch (action.type) {{\n    case 'add':\n      return {{ ...state, lines: [...state.lines, action.line] }};\n    default:\n      return state;\n  }}\n}};",
        ])
    if lang == "go":
        return r.choice([
            f"func (c *Consumer) {f}(ctx context.Context, msg *Message) error {{\n\tif msg == nil {{\n\t\treturn errNilMessage\n\t}}\n\tctx, cancel := context.WithCancel(ctx)\n\tdefer cancel()\n\tif err := c.store.Save(ctx, msg); err != nil {{\n\t\treturn fmt.Errorf(\"save: %w\", err)\n\t}}\n\treturn nil\n}}",
            f"func {f}(h http.Header) (map[string]string, error) {{\n\tout := make(map[string]string, len(h))\n\tfor k, v := range h {{\n\t\tif len(v) == 0 {{\n\t\t\tcontinue\n\t\t}}\n\t\tout[strings.ToLower(k)] = v[0]\n\t}}\n\treturn out, nil\n}}",
        ])
    return r.choice([
        f"pub fn {f}(segments: &mut Vec<Segment>) -> Result<usize> {{\n    segments.sort_by_key(|s| s.min_key);\n    let mut merged = 0;\n    for pair in segments.windows(2) {{\n        if pair[0].max_key >= pair[1].min_key {{\n            merged += 1;\n        }}\n    }}\n    Ok(merged)\n}}",
        f"impl Shard {{\n    pub fn {f}(&mut self) -> io::Result<()> {{\n        let buf = std::mem::take(&mut self.pending);\n        self.file.write_all(&buf)?;\n        self.file.sync_data()\n    }}\n}}",
    ])


def failure_output(r, P, f, tf):
    lang = P["lang"]
    n = r.randint(14, 180)
    if lang == "python":
        kind = r.choice(["assert", "keyerror", "none"])
        if kind == "assert":
            body = (f"    def test_{f}_rounds_half_up():\n        result = {f}(Decimal(\"10.005\"))\n>       assert result == Decimal(\"10.01\")\n"
                    f"E       AssertionError: assert Decimal('10.00') == Decimal('10.01')")
        elif kind == "keyerror":
            body = f"    def test_{f}_missing_locale():\n>       out = {f}(payload)\nE       KeyError: 'locale'"
        else:
            body = f"    def test_{f}_without_account():\n>       assert {f}(None).status == 'skipped'\nE       AttributeError: 'NoneType' object has no attribute 'status'"
        return (f"============================= test session starts ==============================\nplatform linux -- Python 3.12.{r.randint(1, 7)}, pytest-8.{r.randint(0, 3)}.{r.randint(0, 4)}, pluggy-1.5.0\n"
                f"rootdir: /srv/{P['name']}\nconfigfile: pyproject.toml\nplugins: anyio-4.4.0, cov-5.0.0, xdist-3.6.1\ncollected {n + 1} items\n\n"
                + "".join(f"{t} {'.' * r.randint(3, 25)}{'F' if t == tf else ''}\n" for t in P["tests"])
                + f"\n=================================== FAILURES ===================================\n"
                f"_________________________ test_{f} _________________________\n\n{body}\n\n{tf}:{r.randint(20, 300)}: Error\n"
                f"=========================== short test summary info ============================\nFAILED {tf}::test_{f}\n1 failed, {n} passed in {r.randint(2, 40)}.{r.randint(10, 99)}s")
    if lang == "ts":
        a, b = r.randint(1, 9), r.randint(1, 9)
        return (f" FAIL  {tf} > {f} > handles duplicate lines\nAssertionError: expected {a + b} to deeply equal {b}\n ❯ {tf}:{r.randint(10, 200)}:{r.randint(3, 40)}\n\n"
                f" Test Files  1 failed | {r.randint(3, 30)} passed\n      Tests  1 failed | {n} passed")
    if lang == "go":
        return (f"--- FAIL: Test{cap(f)}_Retry ({r.randint(1, 90) / 100:.2f}s)\n    {tf.split('/')[-1]}:{r.randint(20, 200)}: got status 500, want 202\nFAIL\n"
                f"FAIL\tgithub.com/tidepool/{P['name']}/{'/'.join(tf.split('/')[:-1])}\t{r.randint(100, 999) / 1000:.3f}s")
    return (f"---- {f}::tests::handles_overlap stdout ----\nthread '{f}::tests::handles_overlap' panicked at {r.choice(P['files'])}:{r.randint(20, 400)}:9:\n"
            f"assertion `left == right` failed\n  left: {r.randint(2, 9)}\n right: 1\n\nfailures:\n    {f}::tests::handles_overlap\n\n"
            f"test result: FAILED. {n} passed; 1 failed; 0 ignored")


DIAGNOSES = [
    "The failure is in {func}: it treats an empty input as an error instead of returning an empty result. I'll make the empty case explicit and keep the strict path for malformed rows.",
    "This one's a test bug, not a code bug: the fixture builds the object with the old constructor signature. I'll update the fixture.",
    "{func} mutates its argument, and the test reuses the same object in two assertions. Copying at the top of {func} fixes it without changing callers.",
    "The assertion is right; the rounding in {func} is wrong. It truncates instead of rounding half-up. One-line fix.",
]
SMALL_DIFFS = {
    "python": ["-    if not item:\n+    if item is None or item == \"\":", "-    return total\n+    return total.quantize(Decimal(\"0.01\"), rounding=ROUND_HALF_UP)", "-    items.sort()\n+    items = sorted(items)"],
    "ts": ["-  if (!items) return [];\n+  if (!items?.length) return [];", "-  lines.push(line);\n+  return [...lines, line];", "-  const total = a + b;\n+  const total = Math.round((a + b) * 100) / 100;"],
    "go": ["-\tif err != nil {\n+\tif err != nil && !errors.Is(err, io.EOF) {", "-\treturn out\n+\treturn out, nil", "-\tdefer rows.Close()\n+\tdefer func() { _ = rows.Close() }()"],
    "rust": ["-    segments.sort();\n+    segments.sort_by_key(|s| s.min_key);", "-    let buf = self.pending.clone();\n+    let buf = std::mem::take(&mut self.pending);", "-        merged += 1;\n+        merged = merged.saturating_add(1);"],
}


def pass_output(r, P):
    n = r.randint(20, 240)
    lang = P["lang"]
    if lang == "python":
        return f"{'.' * r.randint(8, 30)}\n{n} passed in {r.randint(2, 40)}.{r.randint(10, 99)}s"
    if lang == "ts":
        return f" Test Files  {r.randint(3, 30)} passed\n      Tests  {n} passed\n   Duration  {r.randint(1, 9)}.{r.randint(10, 99)}s"
    if lang == "go":
        return "\n".join(f"ok  \tgithub.com/tidepool/{P['name']}/internal/{a}\t{r.randint(10, 900) / 1000:.3f}s" for a in P["area"][:3])
    return f"running {n} tests\n{'.' * 20}\ntest result: ok. {n} passed; 0 failed; 0 ignored; finished in {r.randint(1, 20)}.{r.randint(10, 99)}s"


FOLLOW_UPS = [
    " I'll add a test that pins this down before changing anything else.",
    " If you'd rather keep the current behaviour, the alternative is to document it in the docstring and move on.",
    " I checked the other call sites while I was there; none of them depend on the old behaviour.",
    " This also explains the intermittent failure on CI last week, which had the same shape.",
    " It's a small change, but I'd still like a second pair of eyes on it because the module has no integration tests.",
    " I'll keep the fix and the refactor in separate commits so the history stays readable.",
]


def longer(r, text, p=0.6):
    return text + (r.choice(FOLLOW_UPS) if r.random() < p else "")


def u_diff(r, P, ppl):
    src = r.choice(P["files"])
    f = r.choice(P["funcs"])
    code = code_snippet(r, P, f).split("\n")
    a = r.randint(10, 300)
    body = []
    for line in code:
        x = r.random()
        changed = line.replace("items", "rows").replace("err", "cause").replace("row", "record")
        if x < 0.25 and changed != line:
            body.append("-" + line)
            body.append("+" + changed)
        elif x < 0.18:
            body.append("+" + line + ("  # keep in sync with the serializer" if P["lang"] == "python" else "  // keep in sync with the serializer"))
        else:
            body.append(" " + line)
    ins, dels = sum(1 for b in body if b.startswith("+")), sum(1 for b in body if b.startswith("-"))
    out = (f" {src} | {ins + dels} {'+' * ins}{'-' * dels}\n 1 file changed, {ins} insertion{'s' if ins != 1 else ''}(+), {dels} deletion{'s' if dels != 1 else ''}(-)\n"
           f"diff --git a/{src} b/{src}\nindex {sha(r)}..{sha(r)} 100644\n--- a/{src}\n+++ b/{src}\n@@ -{a},{len(code)} +{a},{len(code) + ins - dels} @@\n" + "\n".join(body))
    return [("tool_call", f"bash: git diff --stat && git diff {src}"), ("tool_result", out),
            ("assistant_message", longer(r, f"The diff is what we want: {f} is renamed internally and the comment points at the serializer. Nothing else in {src} moved.", 0.8))]


def u_design(r, P, ppl):
    f, g = r.sample(P["funcs"], 2)
    area = r.choice(P["area"])
    q = r.choice([
        f"thinking about the {area} code more broadly. {f} and {g} both do their own validation and their own error mapping, and every new endpoint copies one of them. is there a cleaner way without a big rewrite?",
        f"{r.choice(ppl)} keeps asking whether we should move the {area} logic behind an interface so we can test it without the database. worth it, or is that ceremony?",
        f"before we add more to {area}: what would you change first if you had a free week?",
    ])
    a = r.choice([
        f"Without a rewrite, I'd do three small things:\n\n- Pull the validation into one function per input type and call it from both {f} and {g}. They already agree on the rules, they just spell them differently.\n- Map errors in one place, at the boundary, instead of in each handler. Right now the same failure becomes a 400 in one path and a 422 in the other.\n- Add a table-driven test over both entry points so the next endpoint gets the same behaviour for free.\n\nEach of these is a PR of a few dozen lines, and none of them changes the public behaviour except the inconsistent status code.",
        f"It's worth it for {area}, but only at one seam. The database calls are concentrated in two functions; if those take a small repository object, the rest of the module can be tested with an in-memory fake. Wrapping everything in interfaces would be ceremony. I'd start with {f}, since it has the most branches and the fewest tests.",
        f"First the tests: {area} has good unit coverage but nothing that exercises {f} and {g} together, and that's where the last two bugs were. Second, I'd delete the compatibility paths we kept for the old clients, since the access logs show nobody has used them in months. Third, structured errors, so support can tell causes apart without reading stack traces.",
    ])
    return [("user_message", q), ("assistant_message", a)]


def u_git_status(r, P, ppl):
    files = r.sample(P["files"], r.randint(1, 3))
    lines = [f" M {f}" for f in files]
    if r.random() < 0.4:
        lines.append(f"?? {r.choice(P['tests'])}.orig")
    return [("tool_call", "bash: git status --short"), ("tool_result", "\n".join(lines))]


def u_git_log(r, P, ppl):
    lines = [f"{sha(r)} {fill(m, func=r.choice(P['funcs']), area=r.choice(P['area']))}" for m in r.sample(COMMIT_MSGS, r.randint(5, 9))]
    ev = [("tool_call", f"bash: git log --oneline -{len(lines)}"), ("tool_result", "\n".join(lines))]
    if r.random() < 0.4:
        ev.append(("assistant_message", f"The last few commits are mostly {r.choice(P['area'])} work; nothing touches {r.choice(P['files'])} since the refactor, so the regression is older than that."))
    return ev


def u_test_fail(r, P, ppl):
    f = r.choice(P["funcs"])
    tf = r.choice(P["tests"])
    src = r.choice(P["files"])
    return [
        ("tool_call", f"bash: {P['test_cmd']} {tf}"),
        ("tool_result", failure_output(r, P, f, tf)),
        ("assistant_message", longer(r, fill(r.choice(DIAGNOSES), func=f))),
        ("tool_call", f"Edit {src}\n{r.choice(SMALL_DIFFS[P['lang']])}"),
        ("tool_result", f"The file {src} has been updated."),
        ("tool_call", f"bash: {P['test_cmd']} {tf}"),
        ("tool_result", pass_output(r, P)),
    ][: r.choice([3, 5, 7, 7])]


def u_rg(r, P, ppl):
    f = r.choice(P["funcs"])
    hits = [f"{r.choice(P['files'] + P['tests'])}:{r.randint(3, 400)}:    {r.choice(['result = ', 'return ', 'await ', ''])}{f}({r.choice(['ctx', 'items', 'payload', 'req', 'self.repo'])})" for _ in range(r.randint(2, 6))]
    return [("tool_call", f"bash: rg -n '{f}\\(' ."), ("tool_result", "\n".join(hits)),
            ("assistant_message", f"{f} has {len(hits)} call sites; only the ones in the tests pass the optional argument, so changing its default is safe.")]


def u_read_file(r, P, ppl):
    src = r.choice(P["files"])
    f = r.choice(P["funcs"])
    code = code_snippet(r, P, f)
    if r.random() < 0.7:
        code = code + "\n\n" + code_snippet(r, P, r.choice([g for g in P["funcs"] if g != f]))
    start = r.randint(10, 300)
    numbered = "\n".join(f"{start + i:>4}\t{line}" for i, line in enumerate(code.split("\n")))
    comment = r.choice([
        f"{f} swallows the missing-record case by returning early; callers can't tell 'nothing to do' from 'not found'. I'd return an explicit error.",
        f"This is simpler than I expected. The only side effect in {f} is the write at the end, so the retry above it is safe.",
        f"{f} is fine by itself; the problem is upstream, where the caller passes a partially built object.",
    ])
    return [("tool_call", f"Read {src}"), ("tool_result", numbered), ("assistant_message", comment)]


def u_bug_report(r, P, ppl):
    f = r.choice(P["funcs"])
    p = r.choice(ppl)
    user = r.choice([
        f"{p} reported that {f} blows up when the list is empty. can you reproduce?",
        f"getting a 500 from the {r.choice(P['area'])} endpoint in staging since this morning, logs point at {f}",
        f"weird one: {f} returns duplicates if you call it twice in the same request. any idea why?",
    ])
    asst = r.choice([
        f"Reproduced it with a two-line test. {f} assumes at least one element when it computes the default; I'll guard that and add the test.",
        f"Yes: {f} caches on the request object but the key ignores the second argument, so the second call returns the first call's rows. Fix plus regression test coming.",
        f"The traceback points at the serializer, not at {f} itself. A field became optional last week and the serializer still assumes it's present.",
    ])
    return [("user_message", user), ("assistant_message", longer(r, asst))]


def u_review(r, P, ppl):
    p = r.choice(ppl)
    f = r.choice(P["funcs"])
    src = r.choice(P["files"])
    user = (f"review comments from {p} on my PR:\n\n> {src}:{r.randint(10, 300)} — can {f} take the dependency as a parameter instead of importing it?\n"
            f"> {src}:{r.randint(10, 300)} — nit: this comment is outdated\n> tests: please add a case for the error path\n\ncan you address these?")
    asst = (f"Addressed all three:\n1. {f} now takes the client as an argument; the call sites pass the module-level one.\n"
            f"2. Removed the stale comment.\n3. Added a test that forces the client to fail and checks the error is wrapped.\n\n```diff\n{r.choice(SMALL_DIFFS[P['lang']])}\n```")
    return [("user_message", user), ("assistant_message", asst)]


def u_lint(r, P, ppl):
    src = r.choice(P["files"])
    lang = P["lang"]
    if lang == "python":
        out = f"{src}:{r.randint(5, 200)}:{r.randint(1, 40)}: F401 [*] `typing.Optional` imported but unused\n{src}:{r.randint(5, 200)}:5: B006 Do not use mutable data structures for argument defaults\nFound 2 errors.\n[*] 1 fixable with the `--fix` option."
    elif lang == "ts":
        out = f"{src}\n  {r.randint(5, 200)}:{r.randint(1, 40)}  error  'res' is assigned a value but never used  @typescript-eslint/no-unused-vars\n  {r.randint(5, 200)}:7  warning  Unexpected any. Specify a different type  @typescript-eslint/no-explicit-any\n\n✖ 2 problems (1 error, 1 warning)"
    elif lang == "go":
        out = f"{src}:{r.randint(5, 200)}:{r.randint(2, 30)}: Error return value of `rows.Close` is not checked (errcheck)\n{src}:{r.randint(5, 200)}:2: ineffectual assignment to err (ineffassign)"
    else:
        out = f"warning: this `if` has identical blocks\n  --> {src}:{r.randint(5, 200)}:{r.randint(5, 30)}\nerror: could not compile `{P['name']}` (lib) due to 1 previous error; 1 warning emitted"
    return [("tool_call", f"bash: {P['lint_cmd']}"), ("tool_result", out),
            ("assistant_message", r.choice(["Both are real; fixing them in place rather than adding ignores.", "I'll fix the error and leave the warning, it's in code we're deleting next sprint.", "Fixed. One was an unused variable left over from debugging."]))]


SMALLTALK = [
    ("brb, standup", "Sure, I'll keep going on the tests in the meantime."),
    ("back. where were we?", "We'd just got the failing test green; next was the cleanup in the module we touched."),
    ("thanks, that's much better", "Glad it helps. I'll keep the commit separate so it's easy to revert."),
    ("coffee first, then the rest", "Sounds good."),
    ("the wifi on this train is awful, sorry if I drop", "No problem; everything so far is committed locally, nothing is lost if you drop."),
    ("ok nice, that was a fun one", "It was. The bug only showed up with two workers, which is why nobody hit it locally."),
    ("ugh, long week", "Almost there. The rest of the list is small."),
    ("lol ok", None),
    ("perfect", None),
    ("can you keep the answers shorter today? I'm in meetings between things", "Will do."),
]


def u_smalltalk(r, P, ppl):
    u, a = r.choice(SMALLTALK)
    ev = [("user_message", u)]
    if a and r.random() < 0.8:
        ev.append(("assistant_message", a))
    return ev


def u_code_question(r, P, ppl):
    f = r.choice(P["funcs"])
    q = r.choice([f"why does {f} take a clock argument? feels like overkill", f"is {f} safe to call from two workers at once?",
                  f"what's the difference between {f} and the helper next to it?", f"do we need the lock in {f} at all?"])
    a = r.choice([
        f"The clock is there so tests can freeze time; without it the expiry tests would need real sleeps. In production it's always the system clock.",
        f"Mostly yes. {f} only reads shared state, and the single write goes through the database with a unique constraint, so the second writer gets a conflict instead of a duplicate.",
        f"{f} is the public entry point and validates input; the helper assumes validated input and is only called from inside the module. Merging them would hide that contract.",
        f"The lock protects the in-memory index, which two goroutines can touch during shutdown. Without it the race detector flags {f} in the shutdown test.",
    ])
    return [("user_message", q), ("assistant_message", longer(r, a, 0.5))]


def u_outdated(r, P, ppl):
    pk = {"python": ["pydantic", "httpx", "sqlalchemy", "structlog", "pytest"], "ts": ["vite", "zod", "@tanstack/react-query", "eslint", "typescript"],
          "go": ["golang.org/x/net", "github.com/jackc/pgx/v5", "go.uber.org/zap"], "rust": ["tokio", "serde", "tracing", "clap"]}[P["lang"]]
    rows = []
    for name in r.sample(pk, min(3, len(pk))):
        a, b = r.randint(0, 9), r.randint(0, 20)
        rows.append(f"{name:<28} {a}.{b}.{r.randint(0, 9)}   {a}.{b + r.randint(1, 4)}.0")
    cmd = {"python": "pip list --outdated", "ts": "npm outdated", "go": "go list -m -u all | grep '\\['", "rust": "cargo outdated -R"}[P["lang"]]
    return [("tool_call", f"bash: {cmd}"), ("tool_result", "Package                      Current  Latest\n" + "\n".join(rows)),
            ("assistant_message", "Nothing urgent there. The minor bumps can go in the weekly dependency PR; none of them has a security advisory.")]


def u_ci_log(r, P, ppl):
    job = r.choice(["test", "lint", "build", "typecheck"])
    user = f"CI is red on my branch, {job} job:\n```\n" + r.choice([
        f"Error: Process completed with exit code 1.\n##[error]{r.choice(P['tests'])} failed after retry",
        "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE could not resolve dependency tree",
        "error: failed to fetch `https://index.crates.io/config.json`\nCaused by: network failure",
        f"ModuleNotFoundError: No module named '{r.choice(['freezegun', 'respx', 'hypothesis'])}'",
    ]) + "\n```"
    asst = r.choice(["That's the runner's network, not your change; a re-run should pass. If it fails again I'll pin the mirror.",
                     "The test dependency isn't in the dev extras, so CI never installs it. Adding it to the extras.",
                     "It's the same flaky test as last week. I'll mark it and open an issue with the seed that reproduces it."])
    return [("user_message", user), ("assistant_message", asst)]


def u_todo(r, P, ppl):
    f = r.choice(P["funcs"])
    return [("note", r.choice([f"TODO: {f} should return a typed error instead of a string.", f"Follow-up: ask {r.choice(ppl)} whether {f} is still used by the reporting job.",
                               f"TODO after release: delete the compatibility shim around {f}.", f"Known issue: {f} is slow on accounts with thousands of rows; not blocking."]))]


def u_typecheck(r, P, ppl):
    src = r.choice(P["files"])
    if P["lang"] in ("python",):
        out = f"{src}:{r.randint(5, 300)}: error: Item \"None\" of \"Optional[Account]\" has no attribute \"id\"  [union-attr]\nFound 1 error in 1 file (checked {r.randint(20, 120)} source files)"
    elif P["lang"] == "ts":
        out = f"{src}({r.randint(5, 300)},{r.randint(3, 40)}): error TS2345: Argument of type 'string | undefined' is not assignable to parameter of type 'string'."
    elif P["lang"] == "go":
        out = f"# github.com/tidepool/{P['name']}\n{src}:{r.randint(5, 300)}:{r.randint(2, 30)}: printf: fmt.Sprintf format %d has arg id of wrong type string"
    else:
        out = f"error[E0502]: cannot borrow `self.pending` as mutable because it is also borrowed as immutable\n  --> {src}:{r.randint(5, 300)}:{r.randint(5, 30)}"
    return [("tool_call", f"bash: {P['type_cmd']}"), ("tool_result", out),
            ("assistant_message", "Narrowing the type at the top of the function fixes it; the None case was already handled two lines later, just not visibly to the checker.")]


def u_profile(r, P, ppl):
    rows = []
    for fn in r.sample(P["funcs"], 3):
        own = r.randint(3, 45) + r.randint(0, 99) / 100
        rows.append(f"  {own:5.2f}%  {min(99.99, own + r.randint(0, 30)):5.2f}%   {r.randint(0, 9)}.{r.randint(10, 99)}s   {fn} ({r.choice(P['files'])})")
    return [("tool_call", "bash: py-spy top --pid $(pgrep -f worker) --nonblocking" if P["lang"] == "python" else "bash: go tool pprof -top cpu.out" if P["lang"] == "go" else "bash: perf report --stdio | head -20"),
            ("tool_result", "  %Own   %Total  OwnTime  Function (file)\n" + "\n".join(rows)),
            ("assistant_message", "Most of the time is spent serializing rows we then throw away. Filtering before serialization should cut it substantially.")]


def u_kube_logs(r, P, ppl):
    lines = []
    for _ in range(r.randint(3, 7)):
        lines.append(f"{{\"ts\":\"{r.randint(10, 23)}:{r.randint(10, 59)}:{r.randint(10, 59)}Z\",\"level\":\"error\",\"msg\":\"{r.choice(['upstream connect error', 'context deadline exceeded', 'duplicate key value violates unique constraint', 'retrying request'])}\",\"route\":\"/{r.choice(P['area'])}\"}}")
    lines.sort()
    return [("tool_call", f"bash: kubectl -n staging logs deploy/{P['name']} --tail=40 | grep error"), ("tool_result", "\n".join(lines)),
            ("assistant_message", "The errors started right after the deploy and they're all on one route, so I'd suspect the new code path rather than the infrastructure.")]


def u_refactor(r, P, ppl):
    f = r.choice(P["funcs"])
    src = r.choice(P["files"])
    return [("user_message", f"{src} is getting huge. how would you split it?"),
            ("assistant_message", f"I'd do it in three steps:\n1. Move {f} and its private helpers into their own module, re-exported from the old path.\n"
                                  f"2. Move the validation code next to the types it validates.\n3. Delete the re-export once the call sites are updated.\nEach step is a separate PR with no behaviour change.")]


def u_docs(r, P, ppl):
    f = r.choice(P["funcs"])
    return [("tool_call", f"Edit README.md\n+## {cap(r.choice(P['area']))}\n+\n+`{f}` is the entry point; see the module docs for the error cases."),
            ("tool_result", "The file README.md has been updated."),
            ("assistant_message", "Added a short section to the README so the next person doesn't have to read the code to find the entry point.")]


def u_commit(r, P, ppl):
    msg = fill(r.choice(COMMIT_MSGS), func=r.choice(P["funcs"]), area=r.choice(P["area"]))
    return [("tool_call", f"bash: git add -A && git commit -m \"{msg}\""),
            ("tool_result", f"[{P.get('branch', 'main')} {sha(r)}] {msg}\n {r.randint(1, 6)} files changed, {r.randint(3, 120)} insertions(+), {r.randint(0, 60)} deletions(-)")]


FILLER_UNITS = [(u_git_status, 2), (u_git_log, 2), (u_test_fail, 4), (u_rg, 2), (u_read_file, 3), (u_bug_report, 3), (u_review, 2),
                (u_diff, 2), (u_design, 2),
                (u_lint, 2), (u_smalltalk, 3), (u_code_question, 3), (u_outdated, 1), (u_ci_log, 2), (u_todo, 1), (u_typecheck, 1),
                (u_profile, 1), (u_kube_logs, 1), (u_refactor, 1), (u_docs, 1), (u_commit, 2)]


def filler_unit(r, P, ppl, bad):
    fns, weights = zip(*FILLER_UNITS)
    for _ in range(200):
        unit = r.choices(fns, weights)[0](r, P, ppl)
        if not any(bad.search(t) for _, t in unit):
            return unit
    raise RuntimeError("could not draw value-free filler")


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------

def balanced_pick(r, options, counts, fits):
    ok = [o for o in options if fits(o)]
    low = min(counts[o] for o in ok)
    choice = r.choice([o for o in ok if counts[o] == low])
    counts[choice] += 1
    return choice


def style_index(s, which, rep):
    """Normalizes a value representation: 'cfg' equal to forms[0] counts as forms[0]."""
    val = s[which]
    if rep == "cfg" and cfg_of(val).strip("'\"").lower() == val["forms"][0].lower() and not val["line"]:
        return 0
    return rep


def place(r, n, count, pins):
    """Sorted gap indices (0..n) for `count` ordered blocks; pinned blocks keep their gap, the
    others get distinct gaps strictly between their pinned neighbours when there is room."""
    gaps = [None] * count
    for i, g in pins.items():
        gaps[i] = min(g, n)
    marks = [(-1, 0)] + [(i, gaps[i]) for i in sorted(pins)] + [(count, n)]
    for (ia, ga), (ib, gb) in zip(marks, marks[1:]):
        free = list(range(ia + 1, ib))
        if not free:
            continue
        lo = ga + 1 if ia >= 0 else ga
        hi = gb - 1 if ib < count else gb
        if hi - lo + 1 >= len(free):
            gs = sorted(r.sample(range(lo, hi + 1), len(free)))
        else:
            gs = sorted(r.randint(min(ga, gb), max(ga, gb)) for _ in free)
        for i, g in zip(free, gs):
            gaps[i] = g
    for i in range(1, count):
        gaps[i] = max(gaps[i], gaps[i - 1])
    return gaps


def make_case(r, n, s, wording, style):
    cid = f"h2-{n:03d}"
    P = dict(r.choice(PROJECTS))
    ppl = r.sample(PEOPLE, 6)
    old, new = s["old"], s["new"]
    old_re = value_regex(all_forms(s, old))
    new_re = value_regex(all_forms(s, new))
    bad = value_regex(all_forms(s, old) + all_forms(s, new))

    def clean(t):
        return not bad.search(t)

    def pick_clean(fn):
        for _ in range(200):
            t = fn()
            if clean(t):
                return t
        raise RuntimeError("no clean draw")

    base = dict(S=s["subj"], Sc=cap(s["subj"]), Sn=cap(re.sub(r"^the ", "", s["subj"])), A=s["alias"], Ac=cap(s["alias"]), file=s["file"],
                file2=r.choice(P["files"]), func=r.choice(P["funcs"]), testfile=r.choice(P["tests"]),
                team=s["team"], reason=s["reason"], Reason=cap(s["reason"]), incident=s["incident"],
                p1=ppl[0], p2=ppl[1], tkt=f"{r.choice(['OPS', 'INFRA', 'PLAT', 'DEV'])}-{r.randint(120, 980)}",
                sha=sha(r), pr=r.randint(300, 2400), inc=f"INC-{r.randint(40, 400)}", adr=f"{r.randint(7, 60):03d}")

    # ---- initial statement
    prose_idx = r.choice(range(len(old["forms"]))) if r.random() < 0.35 else 0
    init_events = []  # (kind, text, states, role)
    if style in ("config_snippet", "tool_output"):
        init_rep = "cfg"
    else:
        init_rep = prose_idx
    c_old = dict(base, v=old["forms"][prose_idx], line=line_of(s, old), snip=s["snip"].replace("{L}", line_of(s, old)),
                 task=pick_clean(lambda: fill(r.choice(TASKS), func=base["func"], file2=base["file2"])),
                 r1="", r2="", r3="")
    rules = r.sample(RULES, 3)
    c_old.update(r1=rules[0], r2=rules[1], r3=rules[2])
    has_ack = r.random() < 0.5
    if style == "decision":
        init_events.append(("user_message", fill(r.choice(DECISION), **c_old), "stale", "initial"))
        if has_ack:
            init_events.append(("assistant_message", fill(r.choice(ACK_ASSISTANT), **c_old), "stale", "ack"))
    elif style == "in_passing":
        init_events.append(("user_message", fill(r.choice(IN_PASSING), **c_old), "stale", "initial"))
        if has_ack:
            init_events.append(("assistant_message", fill(r.choice(ACK_ASSISTANT), **c_old), "stale", "ack"))
    elif style == "assistant_explains":
        init_events.append(("user_message", fill(r.choice(EXPLAIN_Q), **c_old), None, "initial_prompt"))
        init_events.append(("assistant_message", fill(r.choice(EXPLAIN_A), **c_old), "stale", "initial"))
        if has_ack:
            init_events.append(("user_message", fill(r.choice(ACK_USER), **c_old), "stale", "ack"))
    elif style == "config_snippet":
        init_events.append(("user_message", fill(r.choice(SNIPPET), **c_old), "stale", "initial"))
        if has_ack:
            init_events.append(("assistant_message", fill(r.choice(ACK_ASSISTANT), **dict(c_old, v=old["forms"][0])), "stale", "ack"))
    elif style == "bullet_list":
        init_events.append(("user_message", fill(r.choice(BULLETS), **c_old), "stale", "initial"))
        if has_ack:
            init_events.append(("assistant_message", fill(r.choice(ACK_ASSISTANT), **c_old), "stale", "ack"))
    elif style == "tool_output":
        init_events.append(("tool_call", fill(r.choice(["Read {file}", "bash: cat {file}"]), **c_old), None, "initial_prompt"))
        init_events.append(("tool_result", c_old["snip"], "stale", "initial"))
        if has_ack:
            init_events.append(("assistant_message", fill(r.choice(ACK_TOOL), **dict(c_old, v=old["forms"][0])), "stale", "ack"))

    # ---- update
    if init_rep == "cfg" or r.random() < 0.65:
        upd_idx = 0 if init_rep == "cfg" else min(init_rep, len(new["forms"]) - 1)
    else:
        others = [i for i in range(len(new["forms"])) if i != init_rep]
        upd_idx = r.choice(others) if others else init_rep
    log_lines = [pick_clean(lambda: f"{sha(r)} {fill(r.choice(COMMIT_MSGS), func=r.choice(P['funcs']), area=r.choice(P['area']))}") for _ in range(5)]
    items = [pick_clean(lambda: fill(r.choice(BURIED_ITEMS), func=r.choice(P["funcs"]), p1=ppl[2], p2=ppl[3])) for _ in range(3)]
    while len(set(items)) < 3:
        items = [pick_clean(lambda: fill(r.choice(BURIED_ITEMS), func=r.choice(P["funcs"]), p1=ppl[2], p2=ppl[3])) for _ in range(3)]
    c_new = dict(base, v=new["forms"][upd_idx], vi=upd_idx, old=old["forms"][0], line_old=line_of(s, old), line_new=line_of(s, new),
                 line=line_of(s, new), snip_new=s["snip"].replace("{L}", line_of(s, new)), log_lines=log_lines, items=items,
                 dir=s.get("numeric"), date="", v0=new["forms"][0])
    want_confirm = r.random() < 0.55
    upd, upd_rep, intrinsic = upd_events(wording, c_new, r, want_confirm)
    update_block = [(k, t, st, "update") for k, t, st in upd]
    confirmed = intrinsic
    if not intrinsic and want_confirm and wording != "question_presupposes":
        pool = CONFIRM_EDIT if wording in EDIT_CONFIRM_WORDINGS else CONFIRM_ACK
        update_block.append(("assistant_message", fill(r.choice(pool), **dict(c_new, v=new["forms"][0])), "current", "confirm"))
        confirmed = True

    old_pool = r.sample(s["uses"], len(s["uses"]))
    new_pool = r.sample(s["uses"], len(s["uses"]))

    def use_block(val, state):
        pool = old_pool if state == "stale" else new_pool
        tmpl = pool.pop()
        return [(k, fill(t, v=val["forms"][0]), state if "{v}" in t else None, "use" if "{v}" in t else "use_aux") for k, t in tmpl]

    n_old_uses = r.randint(2, 3)
    new_use = r.random() < 0.5
    n_new_uses = r.randint(1, 2) if new_use else 0
    near_miss = r.random() < 0.5

    # ---- sessions
    S = r.randint(3, 6)
    u = r.randint(max(2, (S + 1) // 2), S)
    anchors = collections.defaultdict(list)  # session -> ordered list of blocks
    anchors[1].append(init_events)
    # old uses in sessions 1..u (in session u only before the update)
    use_sessions = sorted(r.choice(range(1, u + 1)) for _ in range(n_old_uses))
    if all(x == 1 for x in use_sessions) and u > 1:
        use_sessions[-1] = r.randint(2, u)
    use_sessions.sort()
    for x in use_sessions:
        anchors[x].append(use_block(old, "stale"))
    anchors[u].append(update_block)
    upd_pos_in_u = len(anchors[u]) - 1
    for _ in range(n_new_uses):
        x = r.randint(u, S)
        anchors[x].append(use_block(new, "current"))
    if near_miss:
        k, t = r.choice(NEAR_MISS)
        nm = [(k, fill(t, **base), None, "near_miss")]
        if "Where do we configure" in t:
            nm.append(("assistant_message", fill(NEAR_MISS_REPLY, **base), None, "near_miss"))
        # after the initial statement (blocks keep their order within a session)
        anchors[r.randint(1, S)].append(nm)
    fixed_events = sum(len(b) for blocks in anchors.values() for b in blocks)

    target = r.randint(128, 192)
    filler_budget = max(S * 12, target - fixed_events - S)  # S session_start events
    weights = [r.uniform(0.7, 1.3) for _ in range(S)]
    quotas = [max(12, int(filler_budget * w / sum(weights))) for w in weights]

    # ---- build events
    start = dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc) + dt.timedelta(days=r.randint(0, 300))
    day = start
    events = []
    agent = r.choice(["claude-code", "claude-code", "codex"])
    user = r.choice(["dev", "mk", "jsilva", "alex", "nina"])
    for si in range(1, S + 1):
        if si > 1:
            day = day + dt.timedelta(days=r.randint(2, 7))
        t = day.replace(hour=r.randint(8, 16), minute=r.randint(0, 59), second=r.randint(0, 59))
        branch = f"{r.choice(['feat', 'fix', 'chore'])}/{r.choice(P['area'])}-{r.randint(100, 999)}"
        P["branch"] = branch
        units = []
        got = 0
        while got < quotas[si - 1]:
            unit = filler_unit(r, P, ppl, bad)
            units.append([(k, tx, None, "filler") for k, tx in unit])
            got += len(unit)
        blocks = anchors.get(si, [])
        # positions: gaps 0..len(units); the initial statement goes in the first third of session 1,
        # the update 40-85 % into its session; other blocks spread between them, at distinct gaps when
        # there is room
        nu = len(units)
        pins = {}
        for bi, b in enumerate(blocks):
            if si == 1 and bi == 0:
                pins[bi] = r.randint(1, max(1, nu // 3))
            elif b is update_block:
                pins[bi] = r.randint(max(int(nu * 0.4), bi + 1), max(int(nu * 0.85), bi + 1))
        gaps = place(r, nu, len(blocks), pins)
        seq = []
        bi = 0
        for gi in range(len(units) + 1):
            while bi < len(blocks) and gaps[bi] == gi:
                seq.append(blocks[bi])
                bi += 1
            if gi < len(units):
                seq.append(units[gi])
        sess_events = [("session_start", f"Session started in /home/{user}/{P['name']} on branch {branch}.", None, "filler")]
        for b in seq:
            sess_events.extend(b)
        if r.random() < 0.5:
            sess_events.append(("session_end", "Session ended.", None, "filler"))
        for k, tx, st, role in sess_events:
            if events or k != "session_start" or si > 1:
                if k == "tool_result":
                    t = t + dt.timedelta(seconds=r.randint(1, 20))
                elif k == "user_message":
                    t = t + dt.timedelta(seconds=r.randint(30, 600))
                else:
                    t = t + dt.timedelta(seconds=r.randint(4, 150))
            meta = {"case": cid, "role_in_case": role}
            if k == "session_start":
                meta["git_branch"] = branch
            if st:
                meta["states"] = st
            if role in ("update",):
                meta["wording"] = wording
            if role == "near_miss":
                meta["near_miss"] = True
            events.append(dict(event_id=f"{cid}-{len(events) + 1:04d}", session_id=f"{cid}-s{si}", project_id=cid,
                               agent_id=agent, timestamp=t.strftime("%Y-%m-%dT%H:%M:%SZ"), kind=k, metadata=meta, text=tx))
    # fix the date in an ADR note to the day it is written
    for e in events:
        if e["metadata"]["role_in_case"] == "update" and "Status: accepted ()" in e["text"]:
            e["text"] = e["text"].replace("Status: accepted ()", f"Status: accepted ({e['timestamp'][:10]})")

    stale = [e["event_id"] for e in events if e["metadata"].get("states") == "stale"]
    current = [e["event_id"] for e in events if e["metadata"].get("states") == "current"]
    update_ids = [e["event_id"] for e in events if e["metadata"]["role_in_case"] in ("update", "confirm") and e["metadata"].get("states") == "current"]
    first_update = next(i for i, e in enumerate(events) if e["metadata"]["role_in_case"] == "update")
    last_stale = max(i for i, e in enumerate(events) if e["metadata"].get("states") == "stale")
    upd_texts = [e["text"] for e in events if e["metadata"]["role_in_case"] == "update" and e["metadata"].get("states") == "current"]
    mentions_old = any(old_re.search(tx) for tx in upd_texts)
    q = r.choice(s["questions"])
    if r.random() < 0.3:
        q = r.choice(["Quick check before I deploy: ", "Before I write the docs, ", "Remind me, "]) + q[0].lower() + q[1:]
    last = dt.datetime.strptime(events[-1]["timestamp"], "%Y-%m-%dT%H:%M:%SZ")
    ivf = style_index(s, "old", init_rep)
    uvf = style_index(s, "new", upd_rep)
    query = dict(
        id=cid, query=q, project_id=cid, token_budget=2000, limit=50,
        now=(last + dt.timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        kind=s["kind"], subject=s["subj"], subject_id=s["id"], old=old["forms"][0], new=new["forms"][0],
        wording=wording, update_wording=wording, initial_style=style,
        value_form="same" if ivf == uvf else "different", value_type=s["vtype"],
        update_value=new["forms"][upd_idx] if upd_rep != "cfg" else cfg_of(new),
        update_mentions_old=mentions_old, confirmed=confirmed, new_use=new_use, near_miss=near_miss,
        acknowledged=has_ack, sessions=S, update_session=u, events=len(events),
        turns_between=first_update - last_stale, stale_evidence=stale, current_evidence=current,
        update_ids=update_ids, set=SET_NAME,
    )
    return events, query, (old_re, new_re, bad)


# --------------------------------------------------------------------------------------
# Self-check
# --------------------------------------------------------------------------------------

def check_case(events, q, regs, errors):
    old_re, new_re, bad = regs
    ids = {e["event_id"] for e in events}
    cid = q["id"]
    for eid in q["stale_evidence"] + q["current_evidence"] + q["update_ids"]:
        if eid not in ids:
            errors.append(f"{cid}: evidence id {eid} missing")
    if not q["stale_evidence"] or not q["current_evidence"]:
        errors.append(f"{cid}: empty stale or current evidence")
    st, cu = set(q["stale_evidence"]), set(q["current_evidence"])
    for e in events:
        tx = e["text"]
        if e["event_id"] in st:
            if not old_re.search(tx):
                errors.append(f"{cid}: stale evidence {e['event_id']} lacks the old value")
            if new_re.search(tx):
                errors.append(f"{cid}: stale evidence {e['event_id']} names the new value")
        elif e["event_id"] in cu:
            if not new_re.search(tx):
                errors.append(f"{cid}: current evidence {e['event_id']} lacks the new value")
            if old_re.search(tx) and e["metadata"]["role_in_case"] != "update":
                errors.append(f"{cid}: current evidence {e['event_id']} outside the update names the old value")
        elif bad.search(tx):
            errors.append(f"{cid}: {e['metadata']['role_in_case']} event {e['event_id']} names a value: {bad.search(tx).group(0)!r}")
        if e["project_id"] != cid or e["metadata"]["case"] != cid:
            errors.append(f"{cid}: event {e['event_id']} in the wrong project")
    if bad.search(q["query"]):
        errors.append(f"{cid}: question names a value")
    ts = [e["timestamp"] for e in events]
    if any(b <= a for a, b in zip(ts, ts[1:])):
        errors.append(f"{cid}: timestamps out of order")
    if not (ts[-1] < q["now"]):
        errors.append(f"{cid}: question asked before the last event")
    if not 120 <= len(events) <= 200:
        errors.append(f"{cid}: {len(events)} events, outside 120-200")
    if not 3 <= q["sessions"] <= 6:
        errors.append(f"{cid}: {q['sessions']} sessions")
    order = {e["event_id"]: i for i, e in enumerate(events)}
    first_cur = min((order[x] for x in cu if x in order), default=len(events))
    if any(order[x] > first_cur for x in st if x in order):
        errors.append(f"{cid}: stale evidence after the update")
    if len(q["stale_evidence"]) < 3:
        errors.append(f"{cid}: fewer than three stale statements (initial + 2 uses)")


def main():
    ap = argparse.ArgumentParser(description="Second held-out set for the knowledge-update benchmark")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--out", default=DEFAULT_OUT)
    a = ap.parse_args()
    r = random.Random(a.seed)
    order = list(SUBJECTS)
    r.shuffle(order)
    wcount = collections.Counter({w: 0 for w in WORDINGS})
    scount = collections.Counter({x: 0 for x in INITIAL_STYLES})
    all_events, queries, errors = [], [], []
    for n in range(1, a.cases + 1):
        s = order[(n - 1) % len(order)]
        w = balanced_pick(r, WORDINGS, wcount, lambda w: wording_fits(w, s))
        st = balanced_pick(r, INITIAL_STYLES, scount, lambda x: True)
        for attempt in range(50):
            events, q, regs = make_case(r, n, s, w, st)
            if 120 <= len(events) <= 200:
                break
        check_case(events, q, regs, errors)
        all_events.extend(events)
        queries.append(q)
    used = {q["wording"] for q in queries}
    if a.cases >= len(WORDINGS) and used != set(WORDINGS):
        errors.append(f"wordings never used: {sorted(set(WORDINGS) - used)}")
    if errors:
        for e in errors:
            print("SELF-CHECK FAILED:", e, file=sys.stderr)
        sys.exit(1)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "events.jsonl"), "w") as f:
        for e in all_events:
            # Event metadata is a map of strings (schema v1): booleans become "true"/"false".
            meta = e.get("metadata") or {}
            e["metadata"] = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in meta.items()}
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
    with open(os.path.join(a.out, "queries.jsonl"), "w") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    ev_counts = [q["events"] for q in queries]
    print(f"{len(queries)} cases, {len(all_events)} events (per case {min(ev_counts)}-{max(ev_counts)}, "
          f"median {sorted(ev_counts)[len(ev_counts) // 2]}) -> {a.out}")
    for key in ("wording", "initial_style", "value_form", "update_mentions_old", "confirmed", "new_use", "sessions"):
        print(f"  {key}: " + ", ".join(f"{k}={v}" for k, v in sorted(collections.Counter(str(q[key]) for q in queries).items())))
    print("  self-check passed")


if __name__ == "__main__":
    main()
