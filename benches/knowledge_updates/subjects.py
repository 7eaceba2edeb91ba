"""The subjects of the knowledge-update benchmark: 30 kinds of team facts, two instances each.

Each instance is one fact a coding team states, uses, and later changes:

  s      how the conversation names it (a noun phrase: "the session cache TTL")
  old    ways of writing the stale value; index 0 is the canonical form, and forms at the
         same index in `old` and `new` are the same style ("30 minutes" / "2 hours",
         "half an hour" / "two hours")
  new    ways of writing the current value
  q      questions about it, worded unlike the statements (no value, other words)
  file   where it is configured (confirmations cite it)
  pain   why it changes (a clause; also the complaint before "let's make it …")
  init   templates of the initial statement ({s}, {S}, {v}, {v0}, {file})
  use    templates that use a value without announcing it ({v}: a form of the value)
  deny   update wordings that do not fit the kind ("bump" for a person, say)

Kinds share templates; an instance may override them. Nothing here was tuned against
any held-out benchmark or against the daemon's answers.
"""

NON_NUMERIC = {"bump_to"}

KINDS = [
    # ---------------------------------------------------------------- 1 cache TTL
    dict(
        kind="cache_ttl",
        init=[
            "Let's keep {s} at {v} for now, it matches what the old monolith did.",
            "I set {s} to {v} in {file}. We can tune it once we have hit-rate numbers.",
        ],
        use=[
            "With the {v} TTL the expiry test has to freeze the clock, otherwise it just sits there.",
            "Entries expire after {v}, so the stale-profile bug shows up for at most that long.",
            "I made the fake clock in test_cache_expiry jump {v} plus one second.",
            "The hit-rate panel drops right at the {v} mark, exactly when entries expire.",
        ],
        instances=[
            dict(s="the session cache TTL", old=["30 minutes", "30 min", "half an hour", "1800 s"],
                 new=["2 hours", "2 h", "two hours", "120 minutes"],
                 q=["How long do cached sessions live at the moment?",
                    "What expiry do entries in the session cache get these days?"],
                 file="config/cache.yaml",
                 pain="people keep getting logged out in the middle of long code reviews"),
            dict(s="the feature-flag cache TTL", old=["5 minutes", "5 min", "five minutes", "300 s"],
                 new=["15 minutes", "15 min", "a quarter of an hour", "900 s"],
                 q=["How long does a flag value stay cached before we refetch it now?",
                    "After how long do cached flag lookups go stale at present?"],
                 file="flags/client.ts",
                 pain="the flag service is getting hammered by refetches"),
        ],
    ),
    # ---------------------------------------------------------------- 2 rate limits
    dict(
        kind="rate_limit",
        init=[
            "The limiter for {s} is {v}, enforced in {file}.",
            "We agreed on {v} for {s}; anything above gets a 429.",
        ],
        use=[
            "The load test starts getting 429s right after {v}, that's the limiter doing its job.",
            "At {v} the partner's nightly sync will need backoff, I'll tell them.",
            "I wrote the limiter test to send one more than {v} and expect a 429.",
            "Support ticket: a customer's script hits {v} and gets throttled, working as designed.",
        ],
        instances=[
            dict(s="the public API rate limit", old=["100 requests per minute", "100 req/min", "a hundred requests a minute"],
                 new=["300 requests per minute", "300 req/min", "five requests a second"],
                 q=["How many calls a minute can an API client make before being throttled now?",
                    "What's the throttling threshold for external API consumers currently?"],
                 file="middleware/ratelimit.go",
                 pain="the bigger customers' integrations keep getting throttled"),
            dict(s="the login attempt limit", old=["5 attempts per minute", "5/min", "five tries a minute"],
                 new=["10 attempts per minute", "10/min", "ten tries a minute"],
                 q=["How many failed sign-ins per minute do we allow now?",
                    "How many password guesses a minute before the auth endpoint locks someone out these days?"],
                 file="auth/limits.py",
                 pain="the SSO fallback retries eat up the allowance"),
        ],
    ),
    # ---------------------------------------------------------------- 3 hostnames
    dict(
        kind="hostname",
        deny={"bump_to"},
        init=[
            "{S} is {v}; credentials are in the vault under infra/{v0}.",
            "Point it at {v}, that's {s}.",
        ],
        use=[
            "I can reach {v} from the VPN but not from the CI runners.",
            "The connection timeouts were all to {v}, so it's the network, not the app.",
            "Added {v} to the firewall allowlist for the migration job.",
            "ping {v} is fine, 0.4 ms, the slowness is somewhere else.",
        ],
        instances=[
            dict(s="the staging database host", old=["db-staging-1.internal"], new=["pg-stage.eu.internal"],
                 q=["Which machine does the staging Postgres run on now?",
                    "What server should I point psql at to reach staging data these days?"],
                 file="deploy/staging.env", pain="the old box is out of disk and out of support"),
            dict(s="the metrics server", old=["metrics01.ops.acme.net"], new=["prom.internal.acme.net"],
                 q=["Where are our Prometheus metrics scraped and stored now, which machine?",
                    "Which box hosts the monitoring time-series database at present?"],
                 file="ops/prometheus.yml", pain="metrics01 keeps running out of memory"),
        ],
    ),
    # ---------------------------------------------------------------- 4 ports
    dict(
        kind="port",
        init=[
            "{S} is {v0}.",
            "Let's put {s} on {v0}, nothing else uses it.",
        ],
        use=[
            "docker run -p {v0}:{v0} works locally, so it's a compose problem.",
            "The health check was failing because the service listens on {v0} and the probe was elsewhere.",
            "Opened {v0} in the security group for the ingress.",
            "netstat shows the process bound to {v0} on all interfaces.",
        ],
        instances=[
            dict(s="the orders service gRPC port", old=["50051", "port 50051"], new=["7443", "port 7443"],
                 q=["Which port does the client dial to talk to the orders RPC server now?",
                    "What's the listening port of the orders backend these days?"],
                 file="orders/server.go", pain="the mesh sidecar wants TLS traffic on its standard range"),
            dict(s="the admin dashboard port", old=["8080", "port 8080"], new=["9090", "port 9090"],
                 q=["On which port do I open the internal admin UI now?",
                    "Where does the back-office web console listen nowadays, which port?"],
                 file="admin/Procfile", pain="8080 clashes with the local proxy everyone runs"),
        ],
    ),
    # ---------------------------------------------------------------- 5 branches
    dict(
        kind="branch",
        deny={"bump_to"},
        init=[
            "{S} is `{v}`.",
            "PRs go to {v}, that's {s}.",
        ],
        use=[
            "Rebased on {v} and the conflict in settings.py went away.",
            "CI only runs the e2e suite on pushes to {v}.",
            "git checkout {v} && git pull, then open the PR from there.",
            "The protected-branch rule on {v} requires two approvals.",
        ],
        instances=[
            dict(s="the branch feature PRs merge into", old=["develop"], new=["main"],
                 q=["Which branch should a feature pull request target now?",
                    "Where do feature branches get merged to these days?"],
                 file=".github/workflows/ci.yml", pain="keeping two long-lived branches in sync wastes a day a month"),
            dict(s="the branch we cut hotfixes from", old=["release/2.4"], new=["release/2.5"],
                 q=["Where do hotfixes get branched off from now?",
                    "If prod breaks, which branch do I patch and release from now?"],
                 file="RELEASING.md", pain="2.5 is what customers run now"),
        ],
    ),
    # ---------------------------------------------------------------- 6 owners
    dict(
        kind="owner",
        deny={"bump_to", "moved_to"},
        init=[
            "{S} is {v}; ping them for anything non-trivial.",
            "{v} owns it, {s}.",
        ],
        use=[
            "I'll ask {v} to look at the refund retry PR.",
            "{v} approved the schema diff yesterday.",
            "Tagged {v} on the incident ticket since it's theirs.",
            "Waiting on {v} for a review before I merge.",
        ],
        instances=[
            dict(s="the owner of the payments service", old=["Priya", "Priya Nair", "@priya"],
                 new=["Marcus", "Marcus Chen", "@marcus"],
                 q=["Who is responsible for payments right now?",
                    "Who do I escalate billing-service problems to these days?"],
                 file="CODEOWNERS", pain="she's moving to the platform team"),
            dict(s="the required reviewer for database migrations", old=["Tomás", "Tomás Ruiz", "@tomas"],
                 new=["Aiko", "Aiko Sato", "@aiko"],
                 q=["Who has to sign off on schema changes now?",
                    "Whose approval does a migration PR need at present?"],
                 file="CODEOWNERS", pain="he's on parental leave for three months"),
        ],
    ),
    # ---------------------------------------------------------------- 7 weekly days
    dict(
        kind="weekday",
        deny={"bump_to"},
        init=[
            "{S} is on {v}.",
            "Let's do {s} on {v}, after the sprint demo.",
        ],
        use=[
            "The migration has to be merged before {v}.",
            "Since it goes out on {v}, I'll keep the flag off until then.",
            "I'll put it in {v}'s release notes.",
            "QA wants the build the evening before {v}.",
        ],
        instances=[
            dict(s="the weekly production deploy", old=["Thursday", "Thursdays", "Thu"],
                 new=["Tuesday", "Tuesdays", "Tue"],
                 q=["What day of the week do we ship to prod now?",
                    "When in the week does the production release go out these days?"],
                 file="the release calendar", pain="Thursday deploys leave no time to fix things before the weekend"),
            dict(s="the App Store submission", old=["Monday", "Mondays", "Mon"],
                 new=["Wednesday", "Wednesdays", "Wed"],
                 q=["Which weekday do we send iOS builds to Apple for review now?",
                    "On what day do mobile builds get submitted at present?"],
                 file="the mobile release checklist", pain="review times are longest at the start of the week"),
        ],
    ),
    # ---------------------------------------------------------------- 8 libraries
    dict(
        kind="library",
        deny={"bump_to"},
        init=[
            "We'll use {v} for {s2}.",
            "Going with {v} for {s2}, it's what the team knows.",
        ],
        use=[
            "Wrapped the {v} calls in a small module so we can mock them.",
            "Pinned {v} in the lockfile after that breaking minor release.",
            "The stack trace is from inside {v}, our call passes a None.",
            "Half the startup time is importing {v}, we should lazy-load it.",
        ],
        instances=[
            dict(s="the HTTP client library", s2="outbound HTTP", old=["requests", "python-requests"],
                 new=["httpx", "HTTPX"],
                 q=["What do the Python services call other APIs with now?",
                    "Which package makes outgoing web requests in our backend these days?"],
                 file="pyproject.toml", pain="we need async and HTTP/2"),
            dict(s="the date library in the frontend", s2="dates in the frontend", old=["moment.js", "moment"],
                 new=["date-fns", "date-fns v3"],
                 q=["Which package formats dates in the web app now?",
                    "What do we handle timestamps and time zones with on the client these days?"],
                 file="web/package.json", pain="it's 70 kB of the bundle and deprecated"),
        ],
    ),
    # ---------------------------------------------------------------- 9 feature flags
    dict(
        kind="feature_flag",
        init=[
            "{S}: {v}. Flip it in {file}.",
            "For launch, {s} is {v}.",
        ],
        use=[
            "Since {s} is {v}, the QA account has to opt in by hand.",
            "The dashboard shows the split at {v}, as expected.",
            "Support won't see the new screens much while it's {v}.",
        ],
        instances=[
            dict(s="the new_checkout rollout", old=["10%", "10 percent", "one user in ten"],
                 new=["50%", "50 percent", "half of all users"],
                 q=["What share of customers currently gets the redesigned checkout?",
                    "How widely is the new payment flow rolled out at present?"],
                 file="flags/production.json", pain="conversion on the new flow is up and errors are flat"),
            dict(s="the search_v2 flag", old=["off by default", "disabled by default", "opt-in only"],
                 new=["on by default", "enabled by default", "opt-out"],
                 q=["Do users get the rewritten search engine without asking now?",
                    "Is the second-generation search something people must turn on, or do they get it automatically these days?"],
                 file="flags/defaults.yaml", pain="the relevance numbers beat the old search"),
        ],
    ),
    # ---------------------------------------------------------------- 10 retries
    dict(
        kind="retries",
        init=[
            "Let's cap {s} at {v}.",
            "{S}: {v}, with exponential backoff.",
        ],
        use=[
            "After {v} failed attempts the delivery goes to the dead-letter table.",
            "The flaky endpoint fails all {v} tries about once a day.",
            "The test stubs {v} errors in a row and checks that we give up.",
            "Worst case with {v} tries and backoff is a few minutes of delay.",
        ],
        instances=[
            dict(s="the number of webhook delivery retries", old=["3", "three", "three retries"],
                 new=["5", "five", "five retries"],
                 q=["How many times do we re-attempt a failed webhook now?",
                    "When a customer's endpoint is down, how often do we try again before giving up these days?"],
                 file="webhooks/dispatch.py", pain="customers behind slow proxies lose events"),
            dict(s="the upload retries in the sync job", old=["2", "two", "two retries"],
                 new=["6", "six", "six retries"],
                 q=["How persistent is the S3 sync about failed uploads now, how many attempts?",
                    "How many goes does the sync job get at pushing a file to storage these days?"],
                 file="sync/uploader.rs", pain="S3 throttling makes the nightly sync drop files"),
        ],
    ),
    # ---------------------------------------------------------------- 11 timeouts
    dict(
        kind="timeout",
        init=[
            "{S} is {v}.",
            "Set {s} to {v} in {file}.",
        ],
        use=[
            "The slow report gets cut off at {v}, that's the error in the log.",
            "With {v} the p99 stays under the gateway's own limit.",
            "I made the mock sleep past {v} to exercise the timeout path.",
            "The trace shows the call waiting the full {v} before failing.",
        ],
        instances=[
            dict(s="the timeout on calls to the pricing API", old=["5 seconds", "5 s", "five seconds", "5000 ms"],
                 new=["12 seconds", "12 s", "twelve seconds", "12000 ms"],
                 q=["How long do we wait on the pricing service before giving up now?",
                    "What's the current deadline for pricing lookups?"],
                 file="clients/pricing.ts", pain="their cold starts take eight seconds"),
            dict(s="the Postgres statement timeout", old=["30 seconds", "30 s", "half a minute", "30000 ms"],
                 new=["10 seconds", "10 s", "ten seconds", "10000 ms"],
                 q=["What's the query time limit on the database these days?",
                    "How long can one SQL query run before the server kills it now?"],
                 file="db/pool.py", pain="runaway queries hold locks for too long"),
        ],
    ),
    # ---------------------------------------------------------------- 12 regions
    dict(
        kind="region",
        deny={"bump_to"},
        init=[
            "{S} is {v}.",
            "We'll run in {v}, that's {s}.",
        ],
        use=[
            "Terraform plan for {v} shows no drift.",
            "Latency from Berlin to {v} is the main complaint from the EU sales team.",
            "The AMI has to be copied to {v} first.",
            "The quota increase for {v} came through.",
        ],
        instances=[
            dict(s="our primary AWS region", old=["us-east-1", "N. Virginia"], new=["eu-west-1", "Ireland"],
                 q=["Where do the main workloads run now, geographically?",
                    "Which AWS location hosts production at present?"],
                 file="terraform/main.tf", pain="most customers are in Europe and data residency came up"),
            dict(s="the backup bucket's region", old=["us-central1", "Iowa"], new=["europe-west4", "the Netherlands"],
                 q=["Which region do database backups land in now?",
                    "Where are the nightly dumps stored geographically these days?"],
                 file="ops/backup.tf", pain="the auditors want backups in the EU"),
        ],
    ),
    # ---------------------------------------------------------------- 13 runtime versions
    dict(
        kind="runtime_version",
        init=[
            "{S} is {v}.",
            "Let's standardise on {v}, that's {s}.",
        ],
        use=[
            "The Dockerfile pins {v}.",
            "That deprecation warning is a {v} thing, harmless.",
            "The CI matrix only runs {v}.",
            "Local setup docs say install {v} first.",
        ],
        instances=[
            dict(s="the Node version of the services", old=["Node 18", "node18", "Node.js 18"],
                 new=["Node 20", "node20", "Node.js 20"],
                 q=["Which JavaScript runtime release do we build against now?",
                    "What major release of the server-side JS engine are we on these days?"],
                 file=".nvmrc", pain="18 goes end-of-life in April"),
            dict(s="the Postgres version", old=["Postgres 14", "PG14", "PostgreSQL 14"],
                 new=["Postgres 16", "PG16", "PostgreSQL 16"],
                 q=["What major version of the database are we running at present?",
                    "Which release of our SQL server is production on now?"],
                 file="docker-compose.yml", pain="we want logical replication improvements"),
        ],
    ),
    # ---------------------------------------------------------------- 14 file paths
    dict(
        kind="file_path",
        deny={"bump_to"},
        init=[
            "{S} is {v}.",
            "It lives at {v}, that's {s}.",
        ],
        use=[
            "I added the new key to {v}.",
            "The container mounts {v} read-only.",
            "The loader throws FileNotFoundError when {v} is missing, which is what bit the new hire.",
        ],
        instances=[
            dict(s="the app's config file", old=["config/settings.yaml"], new=["etc/app/config.toml"],
                 q=["Where does the service read its settings from now?",
                    "Which file do I edit to change an option of the app these days?"],
                 file="app/config_loader.py", pain="we want one format across services"),
            dict(s="the log directory", old=["/var/log/app"], new=["/srv/logs/api"],
                 q=["Where do the API's log files end up now?",
                    "Which folder should I tail to see the server output these days?"],
                 file="deploy/logging.conf", pain="the root volume filled up twice",
                 use=["tail -f {v}/error.log shows the same warning.",
                      "logrotate rotates {v} nightly, keeping 14 files.",
                      "The disk alert was about {v} growing 2 GB a day."]),
        ],
    ),
    # ---------------------------------------------------------------- 15 queues
    dict(
        kind="queue",
        deny={"bump_to"},
        init=[
            "{S} is {v}.",
            "Jobs go to {v}, that's {s}.",
        ],
        use=[
            "The worker subscribes to {v}.",
            "{v} backed up to 40k messages during the import.",
            "The alert fires when {v} depth passes 10k.",
            "Purged {v} on staging to get rid of the poison messages.",
        ],
        instances=[
            dict(s="the queue for outgoing email jobs", old=["emails-default"], new=["notifications.email.v2"],
                 q=["Which queue carries the send-mail tasks now?",
                    "Where do we enqueue messages for the mailer at present?"],
                 file="workers/routing.py", pain="the default queue mixes urgent and bulk mail"),
            dict(s="the thumbnail job queue", old=["thumbs"], new=["media-resize-high"],
                 q=["Where do image resize tasks get enqueued these days?",
                    "Which queue do picture-scaling jobs land in now?"],
                 file="media/tasks.py", pain="resizes wait behind video transcodes"),
        ],
    ),
    # ---------------------------------------------------------------- 16 CI and registry
    dict(
        kind="ci_infra",
        deny={"bump_to"},
        init=[
            "{S}: {v}.",
            "We use {v}, that's {s}.",
        ],
        use=[
            "The jobs on {v} take 14 minutes end to end.",
            "Cache restore on {v} is the slow step.",
            "The release workflow fails on {v} because the token lacks a scope.",
        ],
        instances=[
            dict(s="the CI runner", old=["ubuntu-22.04 hosted runners", "GitHub-hosted ubuntu-22.04"],
                 new=["the self-hosted build-xl machines", "self-hosted build-xl"],
                 q=["What machines do our pipeline jobs execute on now?",
                    "Where do the test workflows actually run at present?"],
                 file=".github/workflows/ci.yml", pain="the Rust builds take 25 minutes on small runners"),
            dict(s="where we push container images", old=["Docker Hub", "hub.docker.com"],
                 new=["GHCR", "ghcr.io"],
                 q=["Which registry do release images get published to nowadays?",
                    "Where should the Helm chart pull our images from now?"],
                 file="Makefile", pain="Docker Hub pull limits broke two deploys",
                 use=["docker push to {v} took four minutes for the API image.",
                      "The deploy pulls from {v} with the read-only robot account.",
                      "Image retention on {v} keeps the last 50 tags."]),
        ],
    ),
    # ---------------------------------------------------------------- 17 pool sizes
    dict(
        kind="pool_size",
        init=[
            "{S} is {v}.",
            "Let's start {s} at {v}.",
        ],
        use=[
            "With {v} we saw waits under the load test.",
            "Each pod holds {v}, so three pods is well under the server limit.",
            "The metrics show all {v} busy during the nightly export.",
        ],
        instances=[
            dict(s="the database connection pool size", old=["10", "10 connections", "ten connections"],
                 new=["25", "25 connections", "twenty-five connections"],
                 q=["How many Postgres connections can each API pod hold now?",
                    "What's the per-instance cap on open DB sessions these days?"],
                 file="db/pool.py", pain="requests queue for a connection at peak"),
            dict(s="the Celery worker concurrency", old=["4", "4 processes", "four processes"],
                 new=["8", "8 processes", "eight processes"],
                 q=["How many background tasks does each worker box run in parallel now?",
                    "What's the parallelism of the task workers at present?"],
                 file="workers/celeryconfig.py", pain="the queue backs up every morning"),
        ],
    ),
    # ---------------------------------------------------------------- 18 observability
    dict(
        kind="observability",
        init=[
            "{S} is {v}.",
            "We'll run {s} at {v}.",
        ],
        use=[
            "At {v} the log bill was most of the infra bill last month.",
            "The slow checkout request didn't show up, with {v} that happens.",
            "Grafana's numbers are sampled at {v}, keep that in mind when you read them.",
        ],
        instances=[
            dict(s="the production log level", old=["INFO", "info"], new=["WARN", "warning"],
                 q=["How verbose are prod logs these days?",
                    "What's the minimum severity that gets written to the log in production now?"],
                 file="deploy/prod.env", pain="the log bill tripled",
                 deny={"bump_to"},
                 use=["At {v} the log bill was most of the infra bill last month.",
                      "Those health-check lines show up because we log at {v}.",
                      "The noisy cache-miss lines are {v} lines, so they all get shipped."]),
            dict(s="the tracing sample rate", old=["10%", "10 percent", "one request in ten"],
                 new=["1%", "1 percent", "one request in a hundred"],
                 q=["What fraction of requests get traced now?",
                    "How much of the traffic ends up in the trace backend these days?"],
                 file="otel/collector.yaml", pain="the trace storage costs more than the service"),
        ],
    ),
    # ---------------------------------------------------------------- 19 CI gates
    dict(
        kind="ci_gate",
        init=[
            "{S} is {v}.",
            "We'll enforce {v} for {s}.",
        ],
        use=[
            "The PR fails because it's just below {v}.",
            "{v} is why the generated code has to be excluded.",
            "Reformatted the module to fit {v}.",
        ],
        instances=[
            dict(s="the coverage gate in CI", old=["80%", "80 percent"], new=["70%", "70 percent"],
                 q=["What test coverage does a pull request need to pass the pipeline now?",
                    "How much of the code must the tests exercise for a green build these days?"],
                 file="codecov.yml", pain="people write useless tests just to hit the number"),
            dict(s="the max line length", old=["100 columns", "100 chars", "a hundred characters"],
                 new=["120 columns", "120 chars", "a hundred and twenty characters"],
                 q=["How wide can a line of code get before the linter complains now?",
                    "What's the formatter's wrapping width at present?"],
                 file="ruff.toml", pain="long type signatures wrap in ugly ways"),
        ],
    ),
    # ---------------------------------------------------------------- 20 batch and page sizes
    dict(
        kind="batch_size",
        init=[
            "{S} is {v}.",
            "Let's use {v} for {s}.",
        ],
        use=[
            "At {v} one transaction takes about 300 ms.",
            "The progress bar moves in steps of {v}.",
            "The test fixture creates two chunks of {v} plus a remainder.",
        ],
        instances=[
            dict(s="the CSV importer's batch size", old=["500 rows", "500", "five hundred rows"],
                 new=["2000 rows", "2k", "two thousand rows"],
                 q=["How many records does the spreadsheet import write per transaction now?",
                    "What chunk size does the bulk loader commit in these days?"],
                 file="importer/settings.py", pain="the big imports take hours"),
            dict(s="the default page size of list endpoints", old=["50 items", "50", "fifty items"],
                 new=["100 items", "100", "a hundred items"],
                 q=["How many results does a list call return per page by default now?",
                    "What's the default pagination chunk for collection endpoints at present?"],
                 file="api/pagination.py", pain="the mobile app makes too many round trips"),
        ],
    ),
    # ---------------------------------------------------------------- 21 schedules
    dict(
        kind="schedule",
        init=[
            "{S} runs at {v}.",
            "Scheduled {s} for {v} in {file}.",
        ],
        use=[
            "The disk IO spike at {v} is the job, nothing to worry about.",
            "Don't schedule maintenance around {v}, the job is running then.",
            "The alert at {v} was the job's lock contention again.",
        ],
        instances=[
            dict(s="the nightly database backup", old=["02:00 UTC", "2 am UTC", "two in the morning UTC"],
                 new=["04:30 UTC", "4:30 am UTC", "half past four in the morning UTC"],
                 q=["When does the database dump kick off these days?",
                    "At what hour is the nightly snapshot of the DB taken now?"],
                 file="ops/cron.yaml", pain="it overlaps with the Asia-Pacific peak"),
            dict(s="the stale-session cleanup job", old=["every 15 minutes", "*/15 * * * *", "four times an hour"],
                 new=["every hour", "0 * * * *", "once an hour"],
                 q=["How often does the expired-login sweeper run now?",
                    "What's the cadence of the job that purges old sessions at present?"],
                 file="ops/cron.yaml", pain="it holds locks on the sessions table too often",
                 use=["Running it {v} means at most a few thousand rows per pass.",
                      "The lock waits in the slow log line up with the job, {v}.",
                      "With a {v} cadence the sessions table stays under 2 GB."]),
        ],
    ),
    # ---------------------------------------------------------------- 22 base images
    dict(
        kind="base_image",
        init=[
            "{S} is {v}.",
            "Build FROM {v}, that's {s}.",
        ],
        use=[
            "The image is 410 MB because {v} ships a compiler.",
            "Trivy flags two CVEs in {v}, both without fixes yet.",
            "The healthcheck uses curl, which {v} has.",
        ],
        instances=[
            dict(s="the base image of the Python services", old=["python:3.11-slim"],
                 new=["gcr.io/distroless/python3"],
                 q=["What image do the Python containers build on nowadays?",
                    "Which parent image is in the FROM line of our backend Dockerfiles now?"],
                 file="docker/Dockerfile.python", pain="the security scan keeps flagging the OS packages",
                 deny={"bump_to"}),
            dict(s="the Alpine version of the base images", old=["Alpine 3.18", "alpine:3.18"],
                 new=["Alpine 3.20", "alpine:3.20"],
                 q=["Which release of the minimal Linux distro do our images start from now?",
                    "What OS release is at the bottom of our container images these days?"],
                 file="docker/Dockerfile.base", pain="3.18 stopped getting security fixes"),
        ],
    ),
    # ---------------------------------------------------------------- 23 URLs
    dict(
        kind="url",
        deny={"bump_to"},
        init=[
            "{S} is {v}.",
            "Use {v}, that's {s}.",
        ],
        use=[
            "curl {v}/health answers in 40 ms from here.",
            "The 404s in the mobile logs are calls that don't start with {v}.",
            "Staging mirrors {v} with a -staging suffix on the host.",
        ],
        instances=[
            dict(s="the base URL the mobile app calls", old=["https://api.acme.io/v1"], new=["https://api.acme.io/v2"],
                 q=["Which API endpoint prefix should the phone apps hit now?",
                    "What address do iOS and Android send their requests to these days?"],
                 file="mobile/src/env.ts", pain="v1 is frozen and missing the new fields"),
            dict(s="the Stripe webhook endpoint", old=["https://hooks.acme.io/stripe"],
                 new=["https://pay.acme.io/webhooks/stripe"],
                 q=["Where does the card processor post its events to now?",
                    "Which address receives payment provider callbacks at present?"],
                 file="the Stripe dashboard", pain="the hooks service is being retired",
                 use=["Stripe's dashboard shows deliveries to {v} succeeding.",
                      "The signature check fails locally because the tunnel isn't {v}.",
                      "Replayed yesterday's failed events against {v}."]),
        ],
    ),
    # ---------------------------------------------------------------- 24 buckets
    dict(
        kind="bucket",
        deny={"bump_to"},
        init=[
            "{S} is {v}.",
            "Everything goes to {v}, that's {s}.",
        ],
        use=[
            "The lifecycle rule on {v} moves objects to Glacier after 90 days.",
            "aws s3 ls {v} shows 1.2 TB.",
            "The presigned URLs point at {v}, so CORS has to be set there.",
        ],
        instances=[
            dict(s="the bucket for user uploads", old=["acme-uploads-prod", "s3://acme-uploads-prod"],
                 new=["acme-media-prod", "s3://acme-media-prod"],
                 q=["Which S3 location stores files our users upload now?",
                    "Where do attachments people send us get stored these days?"],
                 file="storage/config.py", pain="we need per-tenant prefixes and the old bucket can't be renamed"),
            dict(s="where raw analytics exports land", old=["s3://analytics-raw", "analytics-raw"],
                 new=["s3://lake-bronze", "lake-bronze"],
                 q=["Where are the raw event dumps for the data team written now?",
                    "Which bucket receives the unprocessed analytics files at present?"],
                 file="etl/export.py", pain="the data team moved to a bronze/silver/gold layout"),
        ],
    ),
    # ---------------------------------------------------------------- 25 size limits
    dict(
        kind="size_limit",
        init=[
            "{S} is {v}.",
            "Cap {s} at {v}.",
        ],
        use=[
            "The upload failed because the PDF is just over {v}.",
            "Nginx rejects anything above {v} before it reaches the app.",
            "The error page says files up to {v}.",
        ],
        instances=[
            dict(s="the max upload size", old=["10 MB", "10 megabytes", "ten megs"],
                 new=["25 MB", "25 megabytes", "twenty-five megs"],
                 q=["How big can a file someone uploads be now?",
                    "What's the largest attachment the app accepts these days?"],
                 file="nginx/app.conf", pain="architects keep sending 20 MB drawings"),
            dict(s="the gateway's request body limit", old=["1 MB", "1 megabyte", "one meg"],
                 new=["4 MB", "4 megabytes", "four megs"],
                 q=["What's the largest JSON payload the gateway lets through now?",
                    "How large can a POST body be before the edge rejects it these days?"],
                 file="gateway/envoy.yaml", pain="bulk order payloads get 413s"),
        ],
    ),
    # ---------------------------------------------------------------- 26 tooling choices
    dict(
        kind="tooling",
        deny={"bump_to"},
        init=[
            "We'll use {v} for {s2}.",
            "{S} is {v}.",
        ],
        use=[
            "Run {v} install after pulling, the lockfile changed.",
            "The CI cache key is the {v} lockfile hash.",
            "{v} complains about a peer dependency, it's harmless.",
        ],
        instances=[
            dict(s="the frontend package manager", s2="the frontend dependencies", old=["npm"], new=["pnpm"],
                 q=["Which tool installs the web app's dependencies now?",
                    "What do I run to add a JS package to the frontend these days?"],
                 file="web/package.json", pain="node_modules is 1.4 GB and installs take minutes"),
            dict(s="the Python dependency tool", s2="locking Python dependencies", old=["pip-tools", "pip-compile"],
                 new=["uv", "uv pip compile"],
                 q=["What do we pin and lock backend packages with nowadays?",
                    "Which tool resolves the requirements files for the API now?"],
                 file="Makefile", pain="resolution takes four minutes in CI",
                 use=["Ran {v} after adding the dependency, the lockfile changed.",
                      "The CI cache key is the hash of what {v} produced.",
                      "{v} picked a different urllib3, that's the diff in requirements.txt."]),
        ],
    ),
    # ---------------------------------------------------------------- 27 team rhythm
    dict(
        kind="team_rhythm",
        init=[
            "{S} is {v}.",
            "Let's do {s} at {v}.",
        ],
        use=[
            "I'll bring it up at {v}.",
            "Can't make it at {v} tomorrow, dentist.",
            "The demo is right after {v}.",
        ],
        instances=[
            dict(s="the daily standup", old=["9:30", "9:30 am", "half past nine"],
                 new=["10:15", "10:15 am", "quarter past ten"],
                 q=["When is the daily sync meeting these days?",
                    "What time does the team meet every morning now?"],
                 file="the team calendar", pain="the Lisbon folks can't make it that early",
                 deny={"bump_to"}),
            dict(s="the sprint length", old=["two weeks", "2 weeks", "a fortnight"],
                 new=["three weeks", "3 weeks", "21 days"],
                 q=["How long is one iteration now?",
                    "What's the planning cycle length for the team at present?"],
                 file="the Jira board settings", pain="two weeks leaves no room for anything bigger than a bug",
                 init=["{S} is {v}.", "Let's keep {s} at {v}."],
                 use=["With {v} per sprint the migration epic spans three sprints.",
                      "Planning every {v} feels like too much ceremony.",
                      "Velocity is points per {v}, so don't compare it across teams."]),
        ],
    ),
    # ---------------------------------------------------------------- 28 token lifetimes
    dict(
        kind="token_lifetime",
        init=[
            "{S} is {v}.",
            "Tokens get {v}, that's {s}.",
        ],
        use=[
            "The integration test mints a token and fast-forwards {v} to check the 401.",
            "With {v} the mobile app has to refresh quietly in the background.",
            "The support case was a link older than {v}, so it had expired.",
        ],
        instances=[
            dict(s="the JWT access token lifetime", old=["15 minutes", "15 min", "a quarter of an hour"],
                 new=["1 hour", "1 h", "one hour", "60 minutes"],
                 q=["How long is a freshly issued bearer token valid now?",
                    "After how long do sign-in credentials for the API run out these days?"],
                 file="auth/jwt.py", pain="the refresh traffic is a third of all auth load"),
            dict(s="the password reset link expiry", old=["24 hours", "24 h", "a day"],
                 new=["30 minutes", "30 min", "half an hour"],
                 q=["How long can someone use a forgot-password email now?",
                    "For how long does a recovery link in the email keep working these days?"],
                 file="auth/reset.py", pain="the pentest report flagged long-lived reset links"),
        ],
    ),
    # ---------------------------------------------------------------- 29 memory limits
    dict(
        kind="memory_limit",
        init=[
            "{S} is {v}.",
            "Give it {v}, that's {s}.",
        ],
        use=[
            "The OOM kill happened right at {v}.",
            "With {v} we fit four replicas per node.",
            "The heap graph flattens just below {v}.",
        ],
        instances=[
            dict(s="the API pod memory limit", old=["512 MiB", "512Mi", "half a gig"],
                 new=["1 GiB", "1Gi", "a gig"],
                 q=["How much RAM does each API pod get now?",
                    "What's the memory ceiling of the backend containers these days?"],
                 file="k8s/api/deployment.yaml", pain="PDF rendering spikes get the pods killed"),
            dict(s="the search indexer's heap", old=["2 GB", "-Xmx2g", "two gigs"],
                 new=["4 GB", "-Xmx4g", "four gigs"],
                 q=["How much memory does the indexer JVM run with at present?",
                    "What's the Java max heap for the indexing process now?"],
                 file="indexer/jvm.options", pain="full GCs stall indexing for seconds"),
        ],
    ),
    # ---------------------------------------------------------------- 30 alert routing
    dict(
        kind="alerting",
        deny={"bump_to"},
        init=[
            "{S} is {v}.",
            "Everything goes to {v}, that's {s}.",
        ],
        use=[
            "Saw the disk alert in {v} at 3am, it resolved itself.",
            "The deploy notifications are noise in {v}, we should split them out.",
            "Muted the flapping check in {v} until Monday.",
        ],
        instances=[
            dict(s="the Slack channel for production alerts", old=["#alerts-prod"], new=["#ops-pager"],
                 q=["Where do prod alarms get posted now?",
                    "Which chat room should I watch for outage notifications these days?"],
                 file="alertmanager.yml", pain="nobody reads the old channel, it's all noise"),
            dict(s="our error tracking service", old=["Sentry", "sentry.io"], new=["Honeybadger", "honeybadger.io"],
                 q=["Which tool collects exceptions from the apps now?",
                    "Where do crash reports from production end up these days?"],
                 file="app/errors.py", pain="the event quota runs out mid-month",
                 use=["{v} grouped the KeyErrors into one issue, 1.2k events.",
                      "The release tag isn't showing in {v}, the env var is missing.",
                      "{v} caught the TypeError from the checkout page."]),
        ],
    ),
]
