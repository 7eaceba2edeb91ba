//! The processes under test: one private nats-server (JetStream) for the whole soak and
//! the real daemon on one data dir, started, killed with SIGKILL, restarted and stopped
//! with SIGTERM through the e2e harness ([`memory_e2e_tests`]); each run's log is
//! appended to `daemon.log` in the work dir.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{Daemon, NatsServer, free_port, http_get};
use serde_json::Value;

/// How long a (re)started daemon may take to report ready: recovery, the vector index
/// loading, the JetStream stream and consumer set up.
const READY_TIMEOUT: Duration = Duration::from_secs(180);
/// How long a stopping daemon may take: the unit file's `TimeoutStopSec`.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// The nats-server, the daemon (when running) and how to start it.
pub(super) struct Stack {
    pub(super) nats: NatsServer,
    pub(super) client: async_nats::Client,
    bin: PathBuf,
    data_dir: PathBuf,
    env: Vec<(String, String)>,
    log_path: PathBuf,
    daemon: Option<Daemon>,
    metrics: String,
    /// Every consumer the daemon runs, as `status` names them.
    consumers: Vec<&'static str>,
}

/// How far the daemon got: the outbox head and each consumer that lags, with its lag.
pub(super) struct Progress {
    pub(super) head: u64,
    pub(super) lagging: Vec<(String, u64)>,
    /// What lagged last while [`Stack::wait_caught_up`] waited (`jetstream` for the
    /// stream's backlog).
    pub(super) last_lagging: Vec<String>,
    /// Indexes at the head by their own commits whose cursor mirrored into the store
    /// (what `status` and `memory_consumer_lag` report) still lags, with that lag.
    pub(super) stale_mirrors: Vec<(String, u64)>,
}

/// The indexes, which keep their cursors in their own commits and mirror them into the
/// store's cursors after each commit.
const INDEXERS: [&str; 2] = ["bm25_indexer", "vector_indexer"];

impl Stack {
    /// Starts the nats-server; the daemon is started by [`Stack::start`].
    pub(super) async fn new(
        bin: &Path,
        data_dir: &Path,
        env: Vec<(String, String)>,
        log_path: &Path,
    ) -> anyhow::Result<Stack> {
        let nats = NatsServer::start()?;
        let client = nats.connect().await?;
        let vector_off = env.iter().any(|(key, value)| {
            key == "AGENT_MEMORY_TELEPORT__VECTOR__ENABLED" && value == "false"
        });
        let mut consumers = vec![
            "session_catalog",
            "segmenter",
            "grip_extractor",
            "rollup_builder",
            "indexing_agent",
            "bm25_indexer",
        ];
        if !vector_off {
            consumers.push("vector_indexer");
        }
        Ok(Stack {
            nats,
            client,
            bin: bin.to_path_buf(),
            data_dir: data_dir.to_path_buf(),
            env,
            log_path: log_path.to_path_buf(),
            daemon: None,
            metrics: String::new(),
            consumers,
        })
    }

    /// The environment every daemon command of the soak runs with.
    pub(super) fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Starts the daemon and waits until `/readyz` answers 200; how long that took.
    pub(super) fn start(&mut self, label: &str) -> anyhow::Result<Duration> {
        anyhow::ensure!(self.daemon.is_none(), "the daemon is running already");
        self.metrics = format!("127.0.0.1:{}", free_port());
        let data_dir = self.data_dir.to_string_lossy().into_owned();
        let url = self.nats.url();
        let args = [
            "--data-dir",
            &data_dir,
            "serve",
            "--nats-url",
            &url,
            "--metrics-listen",
            &self.metrics,
        ];
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        let started = Instant::now();
        let mut daemon = Daemon::start_with_env(&self.bin, &args, &env)?;
        let ready = daemon.wait_ready(&format!("http://{}/readyz", self.metrics), READY_TIMEOUT);
        if let Err(err) = ready {
            self.daemon = Some(daemon);
            self.kill_9(&format!("{label} (never ready)"))?;
            return Err(err);
        }
        self.daemon = Some(daemon);
        self.note(&format!("{label}: ready after {:?}", started.elapsed()))?;
        Ok(started.elapsed())
    }

    /// SIGKILL: a crash with nothing flushed.
    pub(super) fn kill_9(&mut self, label: &str) -> anyhow::Result<()> {
        let Some(mut daemon) = self.daemon.take() else {
            bail!("no daemon to kill");
        };
        let status = daemon.kill_9()?;
        self.keep_log(&daemon, &format!("{label}: kill -9 ({status})"))
    }

    /// SIGTERM and a graceful exit within the stop timeout; an error (after a SIGKILL)
    /// when it does not exit in time or exits with a failure.
    pub(super) fn terminate(&mut self, label: &str) -> anyhow::Result<()> {
        let Some(mut daemon) = self.daemon.take() else {
            bail!("no daemon to stop");
        };
        let result = daemon.terminate_within(STOP_TIMEOUT);
        let outcome = match &result {
            Ok(status) => format!("stopped ({status})"),
            Err(err) => format!("did not stop: {err:#}"),
        };
        self.keep_log(&daemon, &format!("{label}: {outcome}"))?;
        let status = result?;
        anyhow::ensure!(
            status.success(),
            "the daemon exited with {status} on SIGTERM"
        );
        Ok(())
    }

    fn keep_log(&self, daemon: &Daemon, header: &str) -> anyhow::Result<()> {
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .with_context(|| format!("cannot write {}", self.log_path.display()))?;
        writeln!(log, "===== {header}")?;
        log.write_all(daemon.stderr().as_bytes())?;
        log.write_all(daemon.stdout().as_bytes())?;
        Ok(())
    }

    fn note(&self, line: &str) -> anyhow::Result<()> {
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)?;
        writeln!(log, "===== {line}")?;
        Ok(())
    }

    /// The sum of a metric's samples on the running daemon's `/metrics`, 0 when it does
    /// not answer.
    pub(super) fn metric(&self, name: &str) -> f64 {
        match http_get(&format!("http://{}/metrics", self.metrics)) {
            Ok((200, text)) => memory_e2e_tests::metric_sum(&text, name, &[]),
            _ => 0.0,
        }
    }

    /// How far the running daemon is: `memory.admin.status` for the store's
    /// consumers, and `teleport.status` for the two indexes, whose own commits are
    /// their truth (the store holds a mirror, written after each commit: a consumer
    /// without a cursor yet — the vector indexer embedding its first batch — is not
    /// listed by `status` at all).
    pub(super) async fn progress(&self) -> anyhow::Result<Progress> {
        let ask = |subject: &'static str| async move {
            let reply = tokio::time::timeout(
                Duration::from_secs(10),
                self.client.request(subject, "{}".into()),
            )
            .await
            .with_context(|| format!("{subject} timed out"))??;
            anyhow::Ok(serde_json::from_slice::<Value>(&reply.payload)?)
        };
        let status = ask("memory.admin.status").await?;
        let teleport = ask("memory.query.soak.teleport.status").await?;
        let head = status["outbox_head"]
            .as_u64()
            .with_context(|| format!("unexpected status reply: {status}"))?;
        let listed: Vec<(String, u64)> = status["consumers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|consumer| {
                Some((
                    consumer["name"].as_str()?.to_owned(),
                    consumer["lag"].as_u64()?,
                ))
            })
            .collect();
        let mut lagging = Vec::new();
        let mut stale_mirrors = Vec::new();
        for name in &self.consumers {
            let mirrored = listed
                .iter()
                .find(|(listed, _)| listed == name)
                .map(|(_, lag)| *lag);
            let lag = match *name {
                "bm25_indexer" => teleport["bm25_log_head"]
                    .as_u64()
                    .zip(teleport["bm25_cursor"].as_u64())
                    .map_or(head, |(log_head, cursor)| log_head.saturating_sub(cursor)),
                "vector_indexer" => teleport["vector_lag"].as_u64().unwrap_or(head),
                _ => mirrored.unwrap_or(head),
            };
            if lag > 0 {
                lagging.push(((*name).to_owned(), lag));
            } else if INDEXERS.contains(name) && mirrored.unwrap_or(head) > 0 {
                stale_mirrors.push(((*name).to_owned(), mirrored.unwrap_or(head)));
            }
        }
        // An ideas backfill the restarted agent is carrying on: the sessions it has left.
        if let Some(backfill) = status
            .get("ideas_backfill")
            .filter(|value| !value.is_null())
        {
            let count = |field: &str| backfill[field].as_u64().unwrap_or(0);
            let left = count("sessions_total").saturating_sub(count("sessions_done"));
            lagging.push(("ideas_backfill".to_owned(), left.max(1)));
        }
        Ok(Progress {
            head,
            lagging,
            last_lagging: Vec::new(),
            stale_mirrors,
        })
    }

    /// Messages of `MEMORY_EVENTS` the daemon's durable consumer has not acknowledged:
    /// not delivered yet, or delivered and not committed.
    pub(super) async fn jetstream_backlog(&self) -> anyhow::Result<u64> {
        let jetstream = async_nats::jetstream::new(self.client.clone());
        let stream = jetstream.get_stream("MEMORY_EVENTS").await?;
        let info = stream.consumer_info("memory-daemon").await?;
        Ok(info.num_pending + u64::try_from(info.num_ack_pending).unwrap_or(u64::MAX))
    }

    /// Waits until JetStream is drained and every consumer is at the head, the same
    /// twice in a row half a second apart (recalls and commits move the head after the
    /// load stops); the progress then, or an error naming what still lags at `timeout`.
    /// An index's mirrored cursor gets 10 s more to follow its commit; one that does not
    /// is in [`Progress::stale_mirrors`].
    pub(super) async fn wait_caught_up(&self, timeout: Duration) -> anyhow::Result<Progress> {
        let deadline = Instant::now() + timeout;
        let mut last_head = None;
        let mut last_lagging = Vec::new();
        let started = Instant::now();
        let mut timeline = Vec::new();
        let mut mirror_deadline = None;
        loop {
            let backlog = self.jetstream_backlog().await.unwrap_or(u64::MAX);
            let state = match self.progress().await {
                Ok(progress) if backlog == 0 && progress.lagging.is_empty() => {
                    let mirrors_due = *mirror_deadline
                        .get_or_insert_with(|| Instant::now() + Duration::from_secs(10));
                    let settled = progress.stale_mirrors.is_empty() || Instant::now() > mirrors_due;
                    if settled && last_head == Some(progress.head) {
                        self.note(&format!("catch-up: {}", timeline.join("; ")))?;
                        return Ok(Progress {
                            last_lagging,
                            ..progress
                        });
                    }
                    last_head = Some(progress.head);
                    format!(
                        "head {} still moving, mirrors {:?}",
                        progress.head, progress.stale_mirrors
                    )
                }
                Ok(progress) => {
                    last_head = None;
                    mirror_deadline = None;
                    timeline.push(format!(
                        "{:.1}s head {} {:?} js {backlog}",
                        started.elapsed().as_secs_f64(),
                        progress.head,
                        progress.lagging
                    ));
                    last_lagging = progress
                        .lagging
                        .iter()
                        .map(|(name, _)| name.clone())
                        .chain((backlog > 0).then(|| "jetstream".to_owned()))
                        .collect();
                    format!(
                        "head {}, lagging {:?}, jetstream backlog {backlog}",
                        progress.head, progress.lagging
                    )
                }
                Err(err) => {
                    last_head = None;
                    format!("status: {err:#}")
                }
            };
            if Instant::now() > deadline {
                bail!("not caught up after {timeout:?}: {state}");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if self.daemon.is_some() {
            let _ = self.kill_9("soak ended");
        }
    }
}
