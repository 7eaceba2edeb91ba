//! "A year of data": deterministic, realistic coding-agent conversations over 365 days
//! and several projects, for the time-table-of-contents benches (`toc_query`, `loadgen
//! gen-file --dataset year`, `loadgen query`).
//!
//! Sessions of 20–80 events (user and assistant messages, tool calls and their results)
//! framed by `session_start`/`session_end`, on weekdays mostly, in working hours, on
//! one main topic each with a detour now and then: auth/JWT, databases and migrations,
//! CI, deploys, performance, refactors, flaky tests, caching, observability, dependency
//! upgrades, API design, incidents. Texts are filled from templates with identifiers,
//! file paths (per project), tickets, PR numbers, commit hashes and numbers, so the
//! vocabulary varies the way real sessions do. About one session in ten has a lunch
//! break longer than the segmenter's 30-minute gap, and long sessions pass the 4K-token
//! segment budget, so days hold segments of every closing kind.
//!
//! Everything comes from one seed: the same spec yields the same events, ids included.

use serde_json::{Value, json};

/// First instant of the data: 2025-11-01T00:00:00Z. The 365 days end on 2026-10-31, before
/// the reference machine's clock (so the daemon's future-skew check accepts them), and
/// `toc:year:2026` holds ten months.
pub const YEAR_START_MS: u64 = 1_761_955_200_000;
/// Days of data.
pub const YEAR_DAYS: u64 = 365;
/// `now` of the fixed query mix: the day after the data ends.
pub const YEAR_NOW: &str = "2026-11-01T09:00:00Z";
/// Projects, with the share of sessions each gets.
pub const YEAR_PROJECTS: &[(&str, u32)] = &[
    ("webapp", 40),
    ("ingest-pipeline", 25),
    ("mobile-app", 20),
    ("infra", 15),
];
const DAY_MS: u64 = 86_400_000;

/// What to generate.
#[derive(Clone, Debug)]
pub struct YearSpec {
    /// Seed of everything.
    pub seed: u64,
    /// Events to generate, about (whole sessions are kept).
    pub events: usize,
}

impl Default for YearSpec {
    fn default() -> Self {
        YearSpec {
            seed: 2026,
            events: 100_000,
        }
    }
}

/// One generated event, compact until it is turned into the wire JSON.
#[derive(Clone, Debug)]
pub struct YearEvent {
    /// Project id.
    pub project: &'static str,
    /// Session number, unique within the data set.
    pub session: u32,
    /// Position in the session.
    pub turn: u32,
    /// Epoch milliseconds.
    pub timestamp_ms: u64,
    /// Wire kind.
    pub kind: &'static str,
    /// Content.
    pub text: String,
    /// Git branch of the session (metadata).
    pub branch: String,
}

impl YearEvent {
    /// The event as producers send it (wire format v1).
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "event_id": format!("{}-s{}-t{}", self.project, self.session, self.turn),
            "session_id": format!("{}-session-{:05}", self.project, self.session),
            "project_id": self.project,
            "agent_id": "claude-code",
            "timestamp": self.timestamp_ms,
            "kind": self.kind,
            "text": self.text,
            "metadata": {"cwd": format!("/home/dev/src/{}", self.project), "git_branch": self.branch},
        })
    }
}

/// Small deterministic generator (wyrand); statistical quality is plenty for test data.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5eed_0fa7_ea20_2026)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let product = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        ((product >> 64) as u64) ^ (product as u64)
    }

    /// Uniform in `low..=high`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }
}

/// Where a project's files live and what it calls things.
struct ProjectStyle {
    prefix: &'static str,
    ext: &'static str,
    ticket: &'static str,
    services: &'static [&'static str],
    tables: &'static [&'static str],
    test_cmd: &'static str,
}

fn style(project: &str) -> ProjectStyle {
    match project {
        "webapp" => ProjectStyle {
            prefix: "src/",
            ext: "ts",
            ticket: "WEB",
            services: &["api-gateway", "auth-service", "billing-api", "web-frontend"],
            tables: &["users", "sessions", "refresh_tokens", "orders", "invoices"],
            test_cmd: "pnpm vitest run",
        },
        "ingest-pipeline" => ProjectStyle {
            prefix: "crates/ingest/src/",
            ext: "rs",
            ticket: "ING",
            services: &["ingest-worker", "compactor", "kafka-bridge", "query-api"],
            tables: &["events", "consumer_offsets", "partitions", "dead_letters"],
            test_cmd: "cargo nextest run -p ingest",
        },
        "mobile-app" => ProjectStyle {
            prefix: "android/app/src/main/java/com/acme/app/",
            ext: "kt",
            ticket: "MOB",
            services: &["sync-service", "push-gateway", "mobile-bff"],
            tables: &["devices", "sync_cursors", "push_tokens", "drafts"],
            test_cmd: "./gradlew testDebugUnitTest",
        },
        _ => ProjectStyle {
            prefix: "terraform/modules/",
            ext: "tf",
            ticket: "OPS",
            services: &["rds-primary", "eks-cluster", "grafana", "vault"],
            tables: &["schema_migrations", "audit_log", "feature_flags"],
            test_cmd: "terraform plan -out=plan.tfout",
        },
    }
}

/// A subject of conversation: its file stems, identifiers and what people say about it.
struct Topic {
    name: &'static str,
    files: &'static [&'static str],
    idents: &'static [&'static str],
    user: &'static [&'static str],
    assistant: &'static [&'static str],
    calls: &'static [&'static str],
    results: &'static [&'static str],
}

const TOPICS: &[Topic] = &[
    Topic {
        name: "auth",
        files: &[
            "auth/jwt",
            "auth/session",
            "middleware/require_auth",
            "routes/login",
            "auth/oauth_callback",
        ],
        idents: &[
            "refreshAccessToken",
            "verify_jwt",
            "TokenStore",
            "SessionManager",
            "rotate_refresh_token",
            "AUTH_TOKEN_TTL",
            "issueRefreshToken",
        ],
        user: &[
            "Users get logged out after {num} seconds even though the JWT expiry is 15 minutes. Can you look at {file}?",
            "What did we decide about refresh token rotation? I think {ident} still reuses the old token.",
            "The OAuth callback fails with redirect_uri_mismatch on staging, ticket {ticket}.",
            "Can you make {ident} reject expired JWT access tokens with a 401 instead of a 500?",
            "Should the refresh token live in an httpOnly cookie or in localStorage? Security review flagged it in {ticket}.",
            "Add a test that a revoked refresh token cannot be used twice.",
        ],
        assistant: &[
            "The access token TTL is read from AUTH_TOKEN_TTL but {ident} in {file}:{line} multiplies it by 1000 twice, so the JWT expires after {num} ms. I fixed the conversion and added a test.",
            "Decision: we rotate the refresh token on every use and keep the access token at 15 minutes; a reused refresh token revokes the whole family in the {table} table.",
            "The redirect URI registered with the OAuth provider ends with a slash and the one we send does not; I normalized it in {file} so staging and prod match.",
            "I changed {ident} to return 401 with `WWW-Authenticate: Bearer error=\"invalid_token\"` when the JWT signature or expiry check fails.",
            "The refresh token now lives in an httpOnly, Secure, SameSite=Strict cookie; the access token stays in memory only. This closes {ticket}.",
            "Root cause: the clock skew tolerance in verify_jwt was 0, and the {svc} pods drift by up to {num} ms. I set a 30 s leeway.",
        ],
        calls: &[
            "grep -rn \"{ident}\" {file}",
            "{test} auth",
            "curl -s -X POST https://staging.acme.dev/api/auth/refresh -H 'Cookie: rt=...' -w '%{http_code}'",
            "git diff HEAD~1 -- {file}",
        ],
        results: &[
            "{file}:{line}:  const expiresAt = Date.now() + AUTH_TOKEN_TTL * 1000 * 1000;",
            "Tests: {count} passed, 1 failed. FAIL auth/refresh.test: expected 401, received 500 (TokenExpiredError: jwt expired)",
            "HTTP 401 {\"error\":\"invalid_grant\",\"error_description\":\"refresh token reused\"}",
            "Tests: {count} passed, 0 failed ({ms} ms)",
        ],
    },
    Topic {
        name: "database",
        files: &[
            "db/migrations",
            "db/pool",
            "repo/user_repo",
            "db/schema",
            "repo/order_repo",
        ],
        idents: &[
            "ConnectionPool",
            "run_migrations",
            "find_by_email",
            "with_transaction",
            "PG_POOL_MAX",
            "upsert_order",
        ],
        user: &[
            "The migration {mig} takes forever on prod-sized data. Can we add the index concurrently?",
            "We are seeing 'connection pool exhausted' errors under load in {svc}. Pool size is {num}.",
            "Write a migration that adds a revoked_at column to {table} with an index on user_id.",
            "Why is the query in {ident} doing a sequential scan on {table}?",
            "Can you check whether postgres vacuum is keeping up on {table}? Bloat looks high.",
            "Should we switch {ident} to use a read replica?",
        ],
        assistant: &[
            "The query in {ident} filters on lower(email) but the index is on email, so postgres does a sequential scan over {count} rows. I added a functional index in migration {mig}.",
            "I rewrote {mig} to use CREATE INDEX CONCURRENTLY outside the transaction; on a copy of prod it took {sec} s instead of locking {table} for minutes.",
            "The pool is exhausted because {ident} holds a connection across an HTTP call. I moved the call out of the transaction; peak connections dropped from {num} to {pct}.",
            "Decision: reads for reports go to the replica, writes and read-your-writes paths stay on the primary. PG_POOL_MAX stays at 20 per pod.",
            "Autovacuum on {table} is behind: {pct}% dead tuples. I lowered autovacuum_vacuum_scale_factor to 0.02 for that table only.",
            "Migration {mig} adds revoked_at TIMESTAMPTZ NULL and CREATE INDEX CONCURRENTLY idx_{table}_user_id; it is idempotent.",
        ],
        calls: &[
            "psql $DATABASE_URL -c 'EXPLAIN ANALYZE SELECT * FROM {table} WHERE user_id = {num}'",
            "{test} db",
            "cat {file}",
            "psql $DATABASE_URL -c \"SELECT relname, n_dead_tup FROM pg_stat_user_tables ORDER BY 2 DESC LIMIT 5\"",
        ],
        results: &[
            "Seq Scan on {table}  (cost=0.00..{num}.00 rows={count} width=72) (actual time=0.021..{ms}.4 rows=1 loops=1)\nExecution Time: {ms}.9 ms",
            "Index Scan using idx_{table}_user_id on {table} (actual time=0.018..0.020 rows=1 loops=1)\nExecution Time: 0.{num} ms",
            "ERROR:  could not obtain lock on relation \"{table}\"\nSTATEMENT: ALTER TABLE {table} ADD COLUMN revoked_at timestamptz",
            " {table} | {count}\n audit_log | {num}",
        ],
    },
    Topic {
        name: "ci",
        files: &[
            ".github/workflows/ci.yml",
            "ci/cache.sh",
            "scripts/test.sh",
            "ci/Dockerfile.ci",
        ],
        idents: &[
            "actions/cache",
            "RUST_CACHE_KEY",
            "build-matrix",
            "docker buildx",
            "sccache",
        ],
        user: &[
            "CI takes {min} minutes on every PR, it used to be 8. What changed?",
            "The docker layer cache in CI never hits. Can you look at the workflow?",
            "PR {pr} is red on the lint job but it passes locally.",
            "Can we split the CI test job into a matrix so it runs in parallel?",
            "Why did the build on main fail after merging {pr}?",
        ],
        assistant: &[
            "The CI cache key includes the commit sha, so actions/cache never restores anything. I keyed it on the lockfile hash instead; a warm build went from {min} to 7 minutes.",
            "The lint job runs a newer toolchain than your machine: CI pulls the latest stable. I pinned it in rust-toolchain.toml so CI and local agree.",
            "I split the test job into a 4-way build-matrix by package; wall time is {min} minutes, compute about the same.",
            "The docker build copies the whole repo before installing dependencies, which invalidates the layer cache on every commit. I copy the manifests first.",
            "Main broke because {pr} and another PR both added migration {mig}; I renumbered ours.",
        ],
        calls: &[
            "gh run view --log-failed {num}",
            "gh pr checks {pr}",
            "cat {file}",
            "docker buildx build --cache-from type=gha .",
        ],
        results: &[
            "lint\tfail\t{min}m{sec}s\nerror: this `if` has identical blocks --> {file}:{line}",
            "Run actions/cache@v4\nCache not found for input keys: build-{sha}",
            "test (ubuntu-latest)\tpass\t{min}m{sec}s\nbuild\tpass\t3m12s",
            "#12 CACHED [deps 3/4] RUN {test} --no-run\n#14 DONE {sec}.2s",
        ],
    },
    Topic {
        name: "deploy",
        files: &[
            "deploy/helm/values",
            "deploy/canary",
            "k8s/deployment",
            "scripts/release",
        ],
        idents: &[
            "maxUnavailable",
            "readinessProbe",
            "canary-weight",
            "ROLLBACK_ON_5XX",
            "helm upgrade",
        ],
        user: &[
            "The deploy of {ver} to prod is stuck at {pct}% canary. Should we roll back?",
            "Error rate went up right after the {svc} deploy at {hhmm}. Roll back?",
            "Can you write the release notes for {ver}?",
            "The readiness probe kills pods during startup, the deploy never finishes.",
            "How do we do a zero-downtime deploy for the {table} migration?",
        ],
        assistant: &[
            "The canary for {ver} shows a 5xx rate of {pct}% against 0.1% on stable; I rolled back with helm rollback {svc} and opened {ticket}.",
            "Decision: deploys go canary 5% → 25% → 100% with automatic rollback when 5xx exceeds 1% for 5 minutes.",
            "The readiness probe starts after 5 s but {svc} needs {sec} s to warm its cache; I added a startupProbe with a 120 s budget.",
            "Zero-downtime plan: expand (add the nullable column), deploy code that writes both, backfill, then contract in a later release.",
            "Release {ver}: refresh token rotation, the {table} index, CI cache fix ({pr}), and the rollback of the image resizer.",
        ],
        calls: &[
            "kubectl rollout status deploy/{svc} -n prod",
            "helm rollback {svc} {num} -n prod",
            "kubectl logs deploy/{svc} -n prod --since=10m | grep ERROR | head",
            "git log --oneline {ver}..HEAD",
        ],
        results: &[
            "Waiting for deployment \"{svc}\" rollout to finish: {count} of 12 updated replicas are available...",
            "Rollback was a success! Happy Helming!",
            "ERROR {hhmm}:07 upstream connect error or disconnect/reset before headers. reset reason: connection failure ({svc})",
            "{sha} Fix {ident} in {file}\n{sha} Bump {ver}",
        ],
    },
    Topic {
        name: "perf",
        files: &[
            "api/handlers",
            "render/list_view",
            "query/planner",
            "util/serialize",
        ],
        idents: &[
            "serialize_response",
            "renderList",
            "hot_path",
            "p99_latency",
            "BatchLoader",
        ],
        user: &[
            "p99 latency on /api/orders regressed from {ms} ms to {num} ms after the last release.",
            "The list view drops frames when scrolling {count} items. Can you profile it?",
            "Memory of {svc} grows by {num} MB per hour; is that a leak?",
            "Can you benchmark {ident} before and after the change?",
            "CPU is at {pct}% on {svc} with half the usual traffic.",
        ],
        assistant: &[
            "The flamegraph shows {pct}% of CPU in {ident}: we serialize the whole order with its line items twice. Caching the serialized form brings p99 back to {ms} ms.",
            "It is a memory leak: every request registers a listener in {file}:{line} and never removes it. Heap profile shows {count} retained closures.",
            "The N+1 query in {ident} issues one query per row; a BatchLoader cuts it to 2 queries and the endpoint from {num} ms to {ms} ms.",
            "Benchmark: before {num} ns/iter, after {ms} ns/iter ({pct}% faster), criterion, 100 samples.",
            "The list view re-renders every row on scroll because the key is the index; keyed by id it holds 60 fps with {count} items.",
        ],
        calls: &[
            "perf record -g -p $(pgrep {svc}) -- sleep 30",
            "cargo bench --bench {ident}",
            "curl -s localhost:9464/metrics | grep latency_seconds_bucket",
            "go tool pprof -top heap.pb.gz",
        ],
        results: &[
            "  {pct}.12%  {svc}  [.] {ident}\n  11.40%  {svc}  [.] memcpy",
            "{ident}   time:   [{num}.1 µs {num}.4 µs {num}.9 µs]  change: -{pct}.3%",
            "http_request_duration_seconds_bucket{le=\"0.5\"} {count}\nhttp_request_duration_seconds_bucket{le=\"+Inf\"} {num}",
            "flat  flat%   sum%\n{num}MB {pct}%  {pct}%  {ident}",
        ],
    },
    Topic {
        name: "refactor",
        files: &[
            "services/order_service",
            "errors",
            "handlers/mod",
            "state/store",
            "config/loader",
        ],
        idents: &[
            "OrderService",
            "AppError",
            "into_response",
            "ConfigLoader",
            "useStore",
        ],
        user: &[
            "{file} is 1400 lines. Can we split it by responsibility?",
            "Let's replace the string errors in {ident} with a proper error enum.",
            "Rename {ident} to something clearer and update the call sites.",
            "Can you extract the retry logic into its own module? It's copy-pasted in three places.",
            "Remove the dead feature flag code for checkout-v1.",
        ],
        assistant: &[
            "I split {file} into validation, pricing and persistence; {ident} keeps the public API, {count} call sites unchanged, tests green.",
            "Errors are now an AppError enum with thiserror; into_response maps each variant to a status code, so no handler formats errors by hand.",
            "Renamed {ident} across {count} files; the public re-export keeps the old name deprecated for one release.",
            "The retry logic now lives in retry.{ext} with exponential backoff and jitter; the three copies are gone (-{num} lines).",
            "Removed checkout-v1 and its flag: {num} lines deleted, {count} tests removed with it.",
        ],
        calls: &[
            "rg -l \"{ident}\" | wc -l",
            "{test}",
            "git diff --stat",
            "tokei {file}",
        ],
        results: &[
            "{count}",
            " {count} files changed, {num} insertions(+), {num} deletions(-)",
            "Tests: {count} passed, 0 failed",
            "error[E0433]: failed to resolve: use of undeclared type `{ident}`\n --> {file}:{line}:9",
        ],
    },
    Topic {
        name: "flaky",
        files: &[
            "tests/integration/checkout",
            "tests/e2e/login",
            "test_support/clock",
            "tests/retry",
        ],
        idents: &[
            "MockClock",
            "wait_for",
            "retry_with_backoff",
            "TEST_TIMEOUT",
            "beforeEach",
        ],
        user: &[
            "This integration test is flaky on CI: it times out about 1 run in {count}.",
            "The e2e login test fails only when run with the whole suite.",
            "Can we quarantine the flaky checkout test until we fix it? {ticket}",
            "Why does {ident} hang forever sometimes?",
        ],
        assistant: &[
            "The flaky test was a race between the mock clock and the retry timer in {file}: the timer fires before {ident} advances. Awaiting the tick fixes it; 500 runs, 0 failures.",
            "The e2e login test shares a database with the checkout test; the suite order decides who truncates {table} first. Each test now gets its own schema.",
            "The test waited for a fixed 100 ms; on a busy CI runner that is too short. {ident} now polls for the condition with a 5 s timeout.",
            "Quarantined under {ticket}; the test still runs but does not fail the build, and the flaky-test dashboard tracks it.",
        ],
        calls: &[
            "for i in $(seq 1 200); do {test} checkout || break; done",
            "{test} --test-threads=1 login",
            "gh run list --workflow ci --status failure --limit 20",
        ],
        results: &[
            "test checkout::applies_coupon ... FAILED\nthread panicked at 'timed out after 5s waiting for order to settle', {file}:{line}",
            "200 runs, 0 failures",
            "{count} failed runs in the last 7 days, {pct}% of them in integration/checkout",
        ],
    },
    Topic {
        name: "cache",
        files: &[
            "cache/redis",
            "cache/keys",
            "api/products",
            "cache/invalidate",
        ],
        idents: &[
            "RedisCache",
            "cache_key",
            "invalidate_product",
            "CACHE_TTL_SECS",
            "stale_while_revalidate",
        ],
        user: &[
            "Users see stale prices for up to an hour. Is the redis cache TTL too long?",
            "Redis memory is at {pct}% and keys are getting evicted. What's filling it?",
            "Should we cache the product list per user or globally?",
            "Cache hit rate dropped to {pct}% after the deploy.",
        ],
        assistant: &[
            "Prices are cached for CACHE_TTL_SECS=3600 and invalidate_product is never called on price updates. I call it from the price writer; stale reads are gone.",
            "Most memory goes to session keys without a TTL: {count} of them. I set a 24 h expiry; redis used memory fell from {num} MB to {ms} MB.",
            "Decision: cache the product list globally with a 60 s TTL and stale-while-revalidate; per-user data stays uncached.",
            "The new cache_key includes the request id, so nothing is ever reused. Fixed in {file}:{line}; hit rate back to 94%.",
        ],
        calls: &[
            "redis-cli --bigkeys",
            "redis-cli INFO stats | grep keyspace",
            "grep -n CACHE_TTL_SECS {file}",
        ],
        results: &[
            "Biggest string found 'session:{sha}' has {num} bytes\n{count} keys with no TTL",
            "keyspace_hits:{num}\nkeyspace_misses:{count}\nevicted_keys:{count}",
            "{file}:{line}:export const CACHE_TTL_SECS = 3600;",
        ],
    },
    Topic {
        name: "observability",
        files: &[
            "telemetry/tracing",
            "telemetry/metrics",
            "logging/setup",
            "alerts/rules",
        ],
        idents: &[
            "init_tracing",
            "request_id",
            "otel_exporter",
            "http_requests_total",
            "AlertManager",
        ],
        user: &[
            "We can't correlate logs across {svc} and the gateway. Can we propagate a request id?",
            "The alert for high error rate fires every night at {hhmm} and it's noise.",
            "Add a histogram for the checkout latency and a Grafana panel.",
            "Traces stop at the queue boundary; the consumer spans are orphaned.",
        ],
        assistant: &[
            "request_id is now taken from the traceparent header and added to every log line by init_tracing; the gateway forwards it, so one id follows a request across {svc}.",
            "The nightly alert is the batch job's expected 404s; I excluded the job's user agent and raised the threshold to {pct}% for 10 minutes.",
            "Added checkout_latency_seconds (buckets 5 ms to 10 s) and a p50/p99 Grafana panel next to http_requests_total.",
            "The producer now injects the trace context into message headers and the consumer extracts it, so consumer spans hang under the request.",
        ],
        calls: &[
            "kubectl logs deploy/{svc} --since=1h | grep {sha}",
            "curl -s localhost:9464/metrics | grep checkout_latency",
            "promtool check rules {file}",
        ],
        results: &[
            "{hhmm}:14.220Z INFO request_id={sha} path=/api/orders status=200 latency_ms={ms}",
            "checkout_latency_seconds_count {count}\ncheckout_latency_seconds_sum {num}.2",
            "Checking {file}\n  SUCCESS: {count} rules found",
        ],
    },
    Topic {
        name: "deps",
        files: &[
            "Cargo.toml",
            "package.json",
            "build.gradle.kts",
            "gradle/libs.versions.toml",
        ],
        idents: &["tokio", "react", "okhttp", "openssl", "axum", "serde"],
        user: &[
            "Dependabot opened {count} PRs this week. Can you batch the safe ones?",
            "Upgrade {ident} to {ver}; there's a security advisory.",
            "The build broke after the {ident} upgrade in {pr}.",
            "cargo audit reports RUSTSEC-2026-{num}. Are we affected?",
        ],
        assistant: &[
            "I upgraded {ident} to {ver}: two API renames in {file}, all tests pass. The advisory does not apply to us but the upgrade is cheap.",
            "Batched {count} patch-level updates into {pr}; the major bumps ({ident}) stay separate because they change behavior.",
            "{pr} pulled in {ident} {ver}, which removed a deprecated function we still call in {file}:{line}. I ported the call.",
            "We are not affected by RUSTSEC-2026-{num}: the vulnerable function is behind a feature we do not enable. Upgraded anyway.",
        ],
        calls: &[
            "cargo update -p {ident} --precise {ver}",
            "cargo audit",
            "npm outdated",
        ],
        results: &[
            "    Updating {ident} v{ver} -> v{ver}",
            "Crate:     {ident}\nVersion:   {ver}\nID:        RUSTSEC-2026-{num}\nSolution:  Upgrade to >={ver}",
            "Package  Current  Wanted  Latest\n{ident}    {ver}   {ver}  {ver}",
        ],
    },
    Topic {
        name: "api",
        files: &[
            "api/v2/orders",
            "openapi",
            "api/pagination",
            "api/rate_limit",
        ],
        idents: &[
            "RateLimiter",
            "next_cursor",
            "OrdersV2",
            "idempotency_key",
            "ProblemDetails",
        ],
        user: &[
            "Clients get 429 Too Many Requests during the nightly sync. What's our rate limit?",
            "Should pagination be cursor-based or offset-based for /v2/orders?",
            "Add an idempotency key to POST /orders so retries don't double-charge.",
            "Document the error format in the OpenAPI spec.",
        ],
        assistant: &[
            "The rate limit is {num} requests per minute per token; the nightly sync sends bursts of {count}. I added a token-bucket with burst 200 and Retry-After headers.",
            "Decision: cursor-based pagination with an opaque next_cursor; offsets skip or repeat rows while orders are inserted.",
            "POST /orders now honors an Idempotency-Key header: the first response is stored for 24 h in {table} and replayed for retries.",
            "Errors follow RFC 9457 problem details (type, title, status, detail); the OpenAPI spec has a ProblemDetails schema referenced by every 4xx.",
        ],
        calls: &[
            "curl -si https://staging.acme.dev/v2/orders?limit=50 | head -20",
            "npx @redocly/cli lint openapi.yaml",
            "{test} api",
        ],
        results: &[
            "HTTP/2 429\nretry-after: {sec}\nx-ratelimit-remaining: 0",
            "openapi.yaml: validated in {ms}ms\nWoohoo! Your API description is valid.",
            "Tests: {count} passed, 0 failed",
        ],
    },
    Topic {
        name: "incident",
        files: &[
            "runbooks/db_failover",
            "postmortems/incident",
            "alerts/paging",
            "deploy/feature_flags",
        ],
        idents: &[
            "kafka consumer lag",
            "failover",
            "circuit_breaker",
            "DISABLE_WRITES",
            "backpressure",
        ],
        user: &[
            "Kafka consumer lag on partition {small} grew to {num}k messages after the deploy at {hhmm}.",
            "Prod is down: {svc} returns 502 for everyone. What do we do?",
            "Write the postmortem for yesterday's outage, {ticket}.",
            "The database failover took {min} minutes, the runbook says 30 seconds.",
        ],
        assistant: &[
            "Consumer lag comes from a poison message on partition {small}: the consumer retries it forever. I parked it in the dead letter topic and lag is draining at {num} msg/s.",
            "{svc} crash-loops on startup: the new config key is missing in prod. I set it and the pods are healthy; the circuit_breaker kept checkout degraded, not down.",
            "Postmortem {ticket}: 42 minutes of elevated 5xx; root cause a missing index after migration {mig}; action items: pre-deploy EXPLAIN check, alert on seq scans.",
            "The failover waited for DNS TTL 300 s; the runbook assumed 30. We lower the TTL and point clients at the cluster endpoint.",
        ],
        calls: &[
            "kafka-consumer-groups --describe --group {svc}",
            "kubectl get pods -n prod -l app={svc}",
            "kubectl describe pod {svc}-{sha} -n prod | tail -20",
        ],
        results: &[
            "GROUP {svc} TOPIC events PARTITION {small} CURRENT-OFFSET {num} LOG-END-OFFSET {count} LAG {num}",
            "{svc}-{sha}   0/1   CrashLoopBackOff   {small} ({min}m ago)",
            "Last State: Terminated\n  Reason: Error\n  Exit Code: 1\nError: missing config key SIGNING_KEY_PATH",
        ],
    },
];

/// Filler turns that belong to no topic.
const GLUE_USER: &[&str] = &[
    "ok, go ahead",
    "Looks good. Commit it with a clear message.",
    "Run the tests again please.",
    "Can you explain why that works?",
    "Wait, does this also change the public API?",
    "Open a PR for it.",
];
const GLUE_ASSISTANT: &[&str] = &[
    "Done. Committed as {sha} on {branch}.",
    "Opened {pr} with the change and a description of the root cause.",
    "All {count} tests pass.",
    "The public API is unchanged; only internal call sites moved.",
];

struct Session<'a> {
    rng: &'a mut Rng,
    project: &'static str,
    style: ProjectStyle,
    topic: &'static Topic,
    branch: String,
    last_call: usize,
    last_topic: &'static Topic,
}

impl Session<'_> {
    fn file(&mut self, topic: &Topic) -> String {
        let stem = self.rng.pick(topic.files);
        if stem.contains('.') {
            (*stem).to_string() // a complete path: .github/workflows/ci.yml, Cargo.toml
        } else {
            format!("{}{stem}.{}", self.style.prefix, self.style.ext)
        }
    }

    /// `template` with every `{slot}` filled.
    fn fill(&mut self, template: &str, topic: &'static Topic) -> String {
        let mut out = String::with_capacity(template.len() + 32);
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else {
                out.push_str(&rest[open..]);
                return out;
            };
            let slot = &after[..close];
            let rng = &mut *self.rng;
            let value = match slot {
                "file" => self.file(topic),
                "ident" => (*rng.pick(topic.idents)).to_string(),
                "num" => rng.range(2, 5_000).to_string(),
                "count" => rng.range(2, 400).to_string(),
                "small" => rng.range(0, 11).to_string(),
                "ms" => rng.range(3, 900).to_string(),
                "sec" => rng.range(2, 59).to_string(),
                "min" => rng.range(9, 48).to_string(),
                "pct" => rng.range(2, 97).to_string(),
                "line" => rng.range(12, 980).to_string(),
                "ver" => format!(
                    "{}.{}.{}",
                    rng.range(0, 4),
                    rng.range(0, 40),
                    rng.range(0, 12)
                ),
                "ticket" => format!("{}-{}", self.style.ticket, rng.range(100, 2_400)),
                "pr" => format!("#{}", rng.range(120, 3_900)),
                "sha" => format!("{:07x}", rng.next_u64() & 0x0fff_ffff),
                "mig" => format!("{:04}_{}", rng.range(10, 180), topic.name),
                "hhmm" => format!("{:02}:{:02}", rng.range(0, 23), rng.range(0, 59)),
                "table" => (*rng.pick(self.style.tables)).to_string(),
                "svc" => (*rng.pick(self.style.services)).to_string(),
                "test" => self.style.test_cmd.to_string(),
                "ext" => self.style.ext.to_string(),
                "branch" => self.branch.clone(),
                // Not a slot (JSON, a format string): kept verbatim.
                other => format!("{{{other}}}"),
            };
            out.push_str(&value);
            rest = &after[close + 1..];
        }
        out.push_str(rest);
        out
    }

    /// The topic of the next turn: the session's own, sometimes a detour.
    fn turn_topic(&mut self) -> &'static Topic {
        if self.rng.chance(0.15) {
            self.rng.pick(TOPICS)
        } else {
            self.topic
        }
    }

    fn say(&mut self, kind: &'static str) -> String {
        let topic = self.turn_topic();
        let glue = self.rng.chance(0.12);
        let template = match (kind, glue) {
            ("user_message", true) => *self.rng.pick(GLUE_USER),
            ("user_message", false) => *self.rng.pick(topic.user),
            ("assistant_message", true) => *self.rng.pick(GLUE_ASSISTANT),
            ("assistant_message", false) => *self.rng.pick(topic.assistant),
            ("tool_call", _) => {
                self.last_call = (self.rng.next_u64() % topic.calls.len() as u64) as usize;
                self.last_topic = topic;
                topic.calls[self.last_call]
            }
            // A result answers the call before it.
            _ => {
                let results = self.last_topic.results;
                results[self.last_call % results.len()]
            }
        };
        let topic = if kind == "tool_result" {
            self.last_topic
        } else {
            topic
        };
        let mut text = self.fill(template, topic);
        // Assistants often say more than one thing; tool output runs to several lines.
        let (more, pool) = match kind {
            "assistant_message" if !glue => (self.rng.pick(&[0, 0, 0, 1, 1, 2]), topic.assistant),
            "tool_result" if self.rng.chance(0.35) => {
                (self.rng.pick(&[2, 3, 4, 6, 8]), topic.results)
            }
            _ => (&0, topic.results),
        };
        for _ in 0..*more {
            let next = *self.rng.pick(pool);
            text.push(if kind == "tool_result" { '\n' } else { ' ' });
            text.push_str(&self.fill(next, topic));
        }
        text
    }
}

fn is_weekend(day: u64) -> bool {
    // Day 0 of the epoch was a Thursday.
    let weekday = (YEAR_START_MS / DAY_MS + day + 3) % 7; // 0 = Monday
    weekday >= 5
}

/// Relative activity of `project` on `day` (0..=1): weekends and two holiday stretches
/// are quiet, `mobile-app` starts in March, `ingest-pipeline` winds down after summer.
fn activity(project: &str, day: u64) -> f64 {
    let mut weight: f64 = if is_weekend(day) { 0.2 } else { 1.0 };
    if (52..=63).contains(&day) || (270..=283).contains(&day) {
        weight *= 0.15; // end-of-year and summer holidays
    }
    match project {
        "mobile-app" if day < 120 => weight * 0.05,
        "ingest-pipeline" if day > 300 => weight * 0.4,
        _ => weight,
    }
}

/// The data set, in timestamp order.
#[must_use]
pub fn generate(spec: &YearSpec) -> Vec<YearEvent> {
    let mut rng = Rng::new(spec.seed);
    let total_weight: u32 = YEAR_PROJECTS.iter().map(|(_, w)| w).sum();
    let mut events = Vec::with_capacity(spec.events + 100);
    let mut session_number = 0u32;
    while events.len() < spec.events {
        session_number += 1;
        let mut roll = rng.range(0, u64::from(total_weight) - 1) as u32;
        let project = YEAR_PROJECTS
            .iter()
            .find(|(_, w)| {
                if roll < *w {
                    true
                } else {
                    roll -= w;
                    false
                }
            })
            .map_or("webapp", |(p, _)| *p);
        let day = loop {
            let day = rng.range(0, YEAR_DAYS - 1);
            if rng.chance(activity(project, day)) {
                break day;
            }
        };
        // Working hours (UTC), a few evening sessions.
        let hour = if rng.chance(0.1) {
            rng.range(19, 22)
        } else {
            rng.range(7, 17)
        };
        let mut ts = YEAR_START_MS + day * DAY_MS + hour * 3_600_000 + rng.range(0, 3_599_999);
        let topic = rng.pick(TOPICS);
        let branch = format!(
            "{}/{}-{}",
            rng.pick(&["fix", "feat", "chore", "perf"]),
            topic.name,
            rng.range(1, 999)
        );
        let turns = rng.range(20, 80) as u32;
        let break_at = rng
            .chance(0.1)
            .then(|| rng.range(8, u64::from(turns) - 4) as u32);
        let mut session = Session {
            rng: &mut rng,
            project,
            style: style(project),
            topic,
            branch,
            last_call: 0,
            last_topic: topic,
        };
        let push = |events: &mut Vec<YearEvent>,
                    session: &Session<'_>,
                    turn: u32,
                    timestamp_ms: u64,
                    kind: &'static str,
                    text: String| {
            events.push(YearEvent {
                project: session.project,
                session: session_number,
                turn,
                timestamp_ms,
                kind,
                text,
                branch: session.branch.clone(),
            });
        };
        let opening = format!(
            "session started in /home/dev/src/{project} on branch {}",
            session.branch
        );
        push(&mut events, &session, 0, ts, "session_start", opening);
        let mut kind = "user_message";
        let mut pending_tools = 0u64;
        for turn in 1..=turns {
            ts += match kind {
                "user_message" => session.rng.range(15_000, 240_000),
                "assistant_message" => session.rng.range(4_000, 30_000),
                "tool_call" => session.rng.range(1_000, 6_000),
                _ => session.rng.range(1_000, 45_000),
            };
            if break_at == Some(turn) {
                ts += session.rng.range(35, 120) * 60_000; // lunch: longer than the 30 min gap
            }
            let text = session.say(kind);
            push(&mut events, &session, turn, ts, kind, text);
            kind = match kind {
                "user_message" => "assistant_message",
                "assistant_message" => {
                    if pending_tools == 0 && session.rng.chance(0.5) {
                        pending_tools = session.rng.range(1, 3);
                    }
                    if pending_tools > 0 {
                        pending_tools -= 1;
                        "tool_call"
                    } else {
                        "user_message"
                    }
                }
                "tool_call" => "tool_result",
                _ => "assistant_message",
            };
        }
        ts += session.rng.range(5_000, 60_000);
        push(
            &mut events,
            &session,
            turns + 1,
            ts,
            "session_end",
            String::from("session ended"),
        );
    }
    events.sort_by_key(|event| (event.timestamp_ms, event.session, event.turn));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_sized_and_in_range() {
        let spec = YearSpec {
            seed: 7,
            events: 5_000,
        };
        let (a, b) = (generate(&spec), generate(&spec));
        assert_eq!(a.len(), b.len());
        assert!(a.len() >= 5_000 && a.len() < 5_100);
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| x.text == y.text && x.timestamp_ms == y.timestamp_ms)
        );
        let end = YEAR_START_MS + (YEAR_DAYS + 1) * DAY_MS;
        assert!(
            a.iter()
                .all(|e| (YEAR_START_MS..end).contains(&e.timestamp_ms))
        );
        assert!(
            a.iter()
                .all(|e| !e.text.contains("{file}") && !e.text.contains("{ident}"))
        );
    }
}
