//! End-to-end test harness: runs a real `nats-server` and the real
//! `memory-daemon` binary as child processes.
//!
//! Capabilities only count when the binary, started the documented way, serves
//! them (ARCHITECTURE.md §6), so the end-to-end tests in `tests/tests/` drive
//! processes rather than in-process APIs. This module owns the fiddly parts
//! they all share: finding the binaries, picking ports, waiting for readiness
//! without sleeping blindly, capturing logs for failure messages, and making
//! sure no child process outlives its test.
//!
//! Binaries are located at run time:
//! - nats-server: `$NATS_SERVER_BIN`, else `<repo>/.tools/bin/nats-server`
//!   (installed by `scripts/setup.sh`), else `nats-server` on `PATH`;
//! - memory-daemon: see [`daemon_binary`].

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use tempfile::TempDir;

/// How long [`NatsServer::start`] waits for the client port to accept connections.
const NATS_READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Default grace period of [`Daemon::terminate`]; matches `TimeoutStopSec=30`
/// in `deploy/memory-daemon.service`, the budget production gives a clean stop.
const DEFAULT_TERM_TIMEOUT: Duration = Duration::from_secs(30);
/// Poll interval while waiting for a process or a port.
const POLL: Duration = Duration::from_millis(20);
/// How many trailing log lines error messages include.
const LOG_TAIL_LINES: usize = 40;

/// Root of the workspace (the parent of this crate's directory).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map_or_else(|| manifest.join(".."), Path::to_path_buf)
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
///
/// The OS picks it (bind to port 0) and the listener is dropped at once, so a
/// tiny race with other processes remains; [`NatsServer::start`] retries with a
/// new port when the server fails to bind.
///
/// # Panics
/// If the loopback interface cannot be bound at all, in which case no test
/// that needs a port could run anyway.
pub fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("cannot bind an ephemeral port on 127.0.0.1")
}

/// The nats-server binary to run, per the lookup order in the module docs.
pub fn nats_server_binary() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("NATS_SERVER_BIN").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        bail!("NATS_SERVER_BIN={} does not exist", p.display());
    }
    let local = repo_root().join(".tools/bin/nats-server");
    if local.is_file() {
        return Ok(local);
    }
    if let Some(p) = find_on_path("nats-server") {
        return Ok(p);
    }
    bail!(
        "no nats-server found: run `scripts/setup.sh` (installs {}), \
         or set NATS_SERVER_BIN, or put nats-server >= 2.10 on PATH",
        local.display()
    )
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The memory-daemon binary to test.
///
/// `$MEMORY_DAEMON_BIN` wins when set. Otherwise the newest (by mtime) of
/// `<target>/debug/memory-daemon` and `<target>/release/memory-daemon`, where
/// `<target>` is `$CARGO_TARGET_DIR` or `<repo>/target`: the newest is the one
/// most likely built from the current sources. When neither exists the debug
/// path is returned, so the spawn error names the path that was expected.
///
/// `cargo test -p memory-e2e-tests` does not build the daemon (it is another
/// package); use [`build_daemon`] or `cargo build -p memory-daemon` first.
pub fn daemon_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .map_or_else(|| repo_root().join("target"), |p| repo_root().join(p));
    pick_daemon_binary(std::env::var_os("MEMORY_DAEMON_BIN"), &target)
}

/// Pure part of [`daemon_binary`], separate so it can be tested without
/// touching the process environment.
fn pick_daemon_binary(explicit: Option<OsString>, target_dir: &Path) -> PathBuf {
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let debug = target_dir.join("debug").join("memory-daemon");
    let release = target_dir.join("release").join("memory-daemon");
    let mtime = |p: &Path| -> Option<SystemTime> { p.metadata().ok()?.modified().ok() };
    match (mtime(&debug), mtime(&release)) {
        (Some(d), Some(r)) if r > d => release,
        (None, Some(_)) => release,
        _ => debug,
    }
}

/// Builds the daemon with `cargo build -p memory-daemon` (debug profile) once per
/// test process and returns its path, so e2e tests never run a stale binary.
///
/// When `MEMORY_DAEMON_BIN` is set (as `scripts/test.sh` does, after building the
/// whole workspace in one cargo invocation) that binary is used as is: a separate
/// `cargo build -p memory-daemon` resolves features differently from the test build
/// and would compile the TLS stack a second time on a fresh machine.
///
/// Cargo's own locking makes concurrent calls from several test binaries safe.
pub fn build_daemon() -> anyhow::Result<PathBuf> {
    if let Some(explicit) = std::env::var_os("MEMORY_DAEMON_BIN").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(explicit);
        if !path.is_file() {
            anyhow::bail!("MEMORY_DAEMON_BIN={} does not exist", path.display());
        }
        return Ok(path);
    }
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let out = Command::new(cargo)
                .args([
                    "build",
                    "--quiet",
                    "-p",
                    "memory-daemon",
                    "--bin",
                    "memory-daemon",
                ])
                .current_dir(repo_root())
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run cargo: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "cargo build -p memory-daemon failed ({}):\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .filter(|p| !p.is_empty())
                .map_or_else(|| repo_root().join("target"), |p| repo_root().join(p));
            Ok(target.join("debug").join("memory-daemon"))
        })
        .clone()
        .map_err(anyhow::Error::msg)
}

/// A private nats-server with JetStream, on its own port and store directory.
///
/// Killed (and reaped) on drop; the temp dir with its store and log goes with it.
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    dir: TempDir,
    bin: PathBuf,
    /// Token every client must present (`--auth`), when set.
    token: Option<String>,
    /// A configuration file's text (`-c`), for authorization and TLS blocks; the port,
    /// host and JetStream directory stay on the command line.
    config: Option<String>,
}

impl NatsServer {
    /// Starts `nats-server -a 127.0.0.1 -p PORT -js -sd <tmp>/js` and returns once
    /// its client port accepts TCP connections (JetStream is started before the
    /// client listener, so it is usable by then).
    pub fn start() -> anyhow::Result<Self> {
        Self::start_inner(None)
    }

    /// Like [`start`](Self::start), but clients must authenticate with `token`.
    pub fn start_with_token(token: &str) -> anyhow::Result<Self> {
        Self::start_inner(Some(token.to_owned()))
    }

    /// Like [`start`](Self::start), with `config` as the server's configuration file
    /// (authorization, accounts, TLS: what the command line cannot say). [`connect`]
    /// then needs credentials the file accepts: connect with `async_nats` directly.
    ///
    /// [`connect`]: Self::connect
    pub fn start_with_config(config: &str) -> anyhow::Result<Self> {
        Self::start_inner_with(None, Some(config.to_owned()))
    }

    /// The directory the server's files live in (a test puts certificates there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn start_inner(token: Option<String>) -> anyhow::Result<Self> {
        Self::start_inner_with(token, None)
    }

    fn start_inner_with(token: Option<String>, config: Option<String>) -> anyhow::Result<Self> {
        let bin = nats_server_binary()?;
        let dir = tempfile::Builder::new()
            .prefix("memory-e2e-nats-")
            .tempdir()
            .context("creating nats temp dir")?;
        let mut server = NatsServer {
            child: None,
            port: 0,
            dir,
            bin,
            token,
            config,
        };
        // Another process may grab the free port between `free_port()` and the
        // server's bind; only that failure is worth a retry with a new port.
        let mut attempts = 0;
        loop {
            attempts += 1;
            server.port = free_port();
            match server.spawn_and_wait() {
                Ok(()) => return Ok(server),
                Err(_) if attempts < 3 && server.log().contains("address already in use") => {
                    server.kill();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// JetStream store directory (kept across [`restart`](Self::restart)).
    pub fn store_dir(&self) -> PathBuf {
        self.dir.path().join("js")
    }

    /// The server's combined stdout/stderr log (appended to across restarts).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("nats-server.log")
    }

    /// Contents of the server log, for assertions and failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Connects a client with default options (and the server's token, if any).
    pub async fn connect(&self) -> anyhow::Result<async_nats::Client> {
        let options = match &self.token {
            Some(token) => async_nats::ConnectOptions::with_token(token.clone()),
            None => async_nats::ConnectOptions::new(),
        };
        options
            .connect(self.url())
            .await
            .with_context(|| format!("connecting to {}", self.url()))
    }

    /// Whether the server process is currently running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    /// Stops the server abruptly (SIGKILL), like a crash. Its port and store
    /// are kept so [`start_again`](Self::start_again) can bring it back.
    pub fn stop(&mut self) {
        self.kill();
    }

    /// Starts a stopped server again on the same port and store directory.
    pub fn start_again(&mut self) -> anyhow::Result<()> {
        if self.is_running() {
            bail!("nats-server is already running");
        }
        self.spawn_and_wait()
    }

    /// Kills the server and starts it again on the same port and store
    /// directory, for reconnect tests: clients see the connection drop and must
    /// reconnect to the same URL, and JetStream data survives.
    ///
    /// The restart is quicker than a client's disconnect detection: a client may
    /// still report `Connected` and lose a request sent right after this
    /// returns. Tests should retry with short per-attempt timeouts.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.stop();
        self.spawn_and_wait()
    }

    fn spawn_and_wait(&mut self) -> anyhow::Result<()> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .context("opening nats-server log")?;
        let mut command = Command::new(&self.bin);
        command
            .arg("-a")
            .arg("127.0.0.1")
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-js")
            .arg("-sd")
            .arg(self.store_dir());
        if let Some(token) = &self.token {
            command.arg("--auth").arg(token);
        }
        if let Some(config) = &self.config {
            let file = self.dir.path().join("server.conf");
            std::fs::write(&file, config).context("writing the server's configuration")?;
            command.arg("-c").arg(file);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawning {}", self.bin.display()))?;
        self.child = Some(child);

        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + NATS_READY_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!(
                    "nats-server exited during startup ({status}); log tail:\n{}",
                    tail(&self.log(), LOG_TAIL_LINES)
                );
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(250)).is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "nats-server not accepting connections on {addr} after {NATS_READY_TIMEOUT:?}; log tail:\n{}",
                    tail(&self.log(), LOG_TAIL_LINES)
                );
            }
            std::thread::sleep(POLL);
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Errors mean it already exited; wait() reaps it either way.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Three (or `n`) nats-servers clustered on loopback with JetStream, each with its own
/// ports, store directory and log, and optional extra configuration (an account
/// mapping). Killed on drop.
pub struct NatsCluster {
    nodes: Vec<ClusterNode>,
    dir: TempDir,
    bin: PathBuf,
}

struct ClusterNode {
    child: Option<Child>,
    port: u16,
    cluster_port: u16,
}

impl NatsCluster {
    /// Starts `n` servers routed to each other, with `extra` appended to every
    /// server's configuration, and returns once JetStream answers on every one (its
    /// meta leader elected).
    pub fn start(n: usize, extra: &str) -> anyhow::Result<NatsCluster> {
        let mut cluster = NatsCluster::configure(n, extra)?;
        for index in 0..n {
            cluster.launch(index)?;
        }
        for index in 0..n {
            cluster.wait_jetstream(index)?;
        }
        Ok(cluster)
    }

    /// Writes `n` routed servers' configurations (with `extra` appended to each) and
    /// starts none of them: [`launch`](Self::launch) starts one without waiting, so a
    /// test can meet a cluster that has not elected its JetStream leader yet.
    pub fn configure(n: usize, extra: &str) -> anyhow::Result<NatsCluster> {
        let bin = nats_server_binary()?;
        let dir = tempfile::Builder::new()
            .prefix("memory-e2e-nats-cluster-")
            .tempdir()
            .context("creating nats cluster temp dir")?;
        let nodes: Vec<ClusterNode> = (0..n)
            .map(|_| ClusterNode {
                child: None,
                port: free_port(),
                cluster_port: free_port(),
            })
            .collect();
        let routes: Vec<String> = nodes
            .iter()
            .map(|node| format!("nats-route://127.0.0.1:{}", node.cluster_port))
            .collect();
        for (index, node) in nodes.iter().enumerate() {
            let config = format!(
                "server_name: n{index}\nlisten: 127.0.0.1:{port}\n\
                 jetstream {{ store_dir: \"{store}\" }}\n\
                 cluster {{\n  name: memory-e2e\n  listen: 127.0.0.1:{cluster}\n  routes: [{routes}]\n}}\n{extra}\n",
                port = node.port,
                store = dir.path().join(format!("n{index}")).display(),
                cluster = node.cluster_port,
                routes = routes.join(", "),
            );
            std::fs::write(dir.path().join(format!("n{index}.conf")), config)?;
        }
        Ok(NatsCluster { nodes, dir, bin })
    }

    /// Every server's URL, comma-separated (what `--nats-url` takes).
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(|node| format!("nats://127.0.0.1:{}", node.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// One server's URL.
    pub fn url(&self, index: usize) -> String {
        format!("nats://127.0.0.1:{}", self.nodes[index].port)
    }

    /// One server's log.
    pub fn log(&self, index: usize) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("n{index}.log"))).unwrap_or_default()
    }

    /// Connects a client to every server's URL (it picks one and fails over).
    pub async fn connect(&self) -> anyhow::Result<async_nats::Client> {
        let urls: Vec<async_nats::ServerAddr> = self
            .nodes
            .iter()
            .map(|node| format!("nats://127.0.0.1:{}", node.port).parse())
            .collect::<Result<_, _>>()?;
        async_nats::ConnectOptions::new()
            .retry_on_initial_connect()
            .connect(urls)
            .await
            .context("connecting to the cluster")
    }

    /// SIGKILL one server (its store stays for [`start_again`](Self::start_again)).
    pub fn kill_9(&mut self, index: usize) {
        if let Some(mut child) = self.nodes[index].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a killed server again with its store.
    pub fn start_again(&mut self, index: usize) -> anyhow::Result<()> {
        self.launch(index)?;
        self.wait_jetstream(index)
    }

    /// Starts server `index` and does not wait for it.
    pub fn launch(&mut self, index: usize) -> anyhow::Result<()> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("n{index}.log")))?;
        let child = Command::new(&self.bin)
            .arg("-c")
            .arg(self.dir.path().join(format!("n{index}.conf")))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawning {}", self.bin.display()))?;
        self.nodes[index].child = Some(child);
        Ok(())
    }

    /// Waits until server `index` answers `$JS.API.INFO` (JetStream up and a meta
    /// leader elected).
    fn wait_jetstream(&mut self, index: usize) -> anyhow::Result<()> {
        let url = self.url(index);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(child) = self.nodes[index].child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!(
                    "nats-server n{index} exited ({status}); log tail:\n{}",
                    tail(&self.log(index), LOG_TAIL_LINES)
                );
            }
            // A thread of its own: the caller may be inside a tokio runtime.
            let probe_url = url.clone();
            let ready = std::thread::spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return false;
                };
                runtime.block_on(async {
                    let Ok(client) = async_nats::connect(&probe_url).await else {
                        return false;
                    };
                    let reply = tokio::time::timeout(
                        Duration::from_secs(2),
                        client.request("$JS.API.INFO", "".into()),
                    )
                    .await;
                    matches!(reply, Ok(Ok(message))
                        if serde_json::from_slice::<serde_json::Value>(&message.payload)
                            .is_ok_and(|info| info.get("error").is_none()))
                })
            })
            .join()
            .unwrap_or(false);
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "JetStream on n{index} not ready after 60 s; log tail:\n{}",
                    tail(&self.log(index), LOG_TAIL_LINES)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for index in 0..self.nodes.len() {
            self.kill_9(index);
        }
    }
}

/// A running memory-daemon (or any binary under test) with stdout and stderr
/// captured to files, so a failing test can show what the process said.
///
/// Killed (SIGKILL) and reaped on drop.
pub struct Daemon {
    child: Child,
    pid: u32,
    dir: TempDir,
}

impl Daemon {
    /// Spawns `bin args…` with stdin closed and output captured. It does not
    /// wait for readiness; see [`wait_ready`](Self::wait_ready).
    pub fn start(bin: &Path, args: &[&str]) -> anyhow::Result<Daemon> {
        Self::start_with_env(bin, args, &[])
    }

    /// Like [`start`](Self::start), with extra environment variables.
    pub fn start_with_env(
        bin: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> anyhow::Result<Daemon> {
        if !bin.is_file() {
            bail!(
                "{} not found; build it (`cargo build -p memory-daemon`, or call build_daemon()) \
                 or set MEMORY_DAEMON_BIN",
                bin.display()
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("memory-e2e-daemon-")
            .tempdir()
            .context("creating daemon log dir")?;
        let stdout = File::create(dir.path().join("stdout.log"))?;
        let stderr = File::create(dir.path().join("stderr.log"))?;
        let child = Command::new(bin)
            .args(args)
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("spawning {} {}", bin.display(), args.join(" ")))?;
        Ok(Daemon {
            pid: child.id(),
            child,
            dir,
        })
    }

    /// Process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Directory holding `stdout.log` and `stderr.log`.
    pub fn log_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Everything the process wrote to stdout so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stdout.log")).unwrap_or_default()
    }

    /// Everything the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// Exit status if the process has exited (reaping it), without blocking.
    /// Once reaped, the status is remembered and returned again.
    pub fn try_status(&mut self) -> anyhow::Result<Option<ExitStatus>> {
        Ok(self.child.try_wait()?)
    }

    /// Kills with SIGKILL — a crash with no chance to flush — and reaps it.
    /// Returns the exit status (the earlier one if it had already exited).
    pub fn kill_9(&mut self) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        // An error here only means it exited meanwhile; wait() reaps it either way.
        let _ = self.child.kill();
        Ok(self.child.wait()?)
    }

    /// Sends SIGTERM (what systemd and Kubernetes send) and waits up to 30 s
    /// for a graceful exit; see [`terminate_within`](Self::terminate_within).
    pub fn terminate(&mut self) -> anyhow::Result<ExitStatus> {
        self.terminate_within(DEFAULT_TERM_TIMEOUT)
    }

    /// Sends SIGTERM via `kill -TERM <pid>` (std has no portable signal API and
    /// this crate forbids `unsafe`) and waits up to `timeout`. If the process is
    /// still alive then, it is SIGKILLed and an error is returned: a daemon that
    /// ignores SIGTERM is a bug.
    pub fn terminate_within(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.try_status()? {
            return Ok(status);
        }
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .context("running kill -TERM")?;
        if !sent.success() {
            // The process may have exited between try_status and kill.
            if let Some(status) = self.try_status()? {
                return Ok(status);
            }
            bail!("kill -TERM {} failed ({sent})", self.pid);
        }
        match self.wait_exit(timeout) {
            Ok(status) => Ok(status),
            Err(e) => {
                let _ = self.kill_9();
                Err(e.context(format!("process {} ignored SIGTERM; killed", self.pid)))
            }
        }
    }

    /// Waits up to `timeout` for the process to exit on its own (e.g. a one-shot
    /// CLI command) and reaps it.
    pub fn wait_exit(&mut self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_status()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                bail!(
                    "process {} still running after {timeout:?}; stderr tail:\n{}",
                    self.pid,
                    tail(&self.stderr(), LOG_TAIL_LINES)
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until `GET url` answers 200 (see [`wait_http_ok`]), failing early
    /// — with the daemon's stderr — if the process exits first.
    pub fn wait_ready(&mut self, url: &str, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_status()? {
                bail!(
                    "daemon exited ({status}) before {url} was ready; stderr tail:\n{}",
                    tail(&self.stderr(), LOG_TAIL_LINES)
                );
            }
            if matches!(http_get(url), Ok((200, _))) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "{url} not ready after {timeout:?}; daemon stderr tail:\n{}",
                    tail(&self.stderr(), LOG_TAIL_LINES)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // Harmless if it already exited; never leave a process behind a test.
        let _ = self.kill_9();
    }
}

/// Polls `GET url` until it answers HTTP 200 or `timeout` passes.
///
/// `url` is `http://host:port/path`, `host:port/path` or `host:port` (path
/// defaults to `/readyz`, the daemon's readiness endpoint).
pub fn wait_http_ok(url: &str, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match http_get(url) {
            Ok((200, _)) => return Ok(()),
            Ok((status, body)) => format!("HTTP {status}: {}", tail(&body, 5)),
            Err(e) => format!("{e:#}"),
        };
        if Instant::now() >= deadline {
            bail!("{url} not ready after {timeout:?}; last attempt: {last}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One plain HTTP/1.0 GET over a std `TcpStream`: returns (status, body).
///
/// Deliberately dependency-free and minimal (no TLS, no chunked encoding):
/// HTTP/1.0 makes the server close the connection after the body, so reading
/// to EOF yields the whole response. Good enough for `/readyz`, `/healthz` and
/// `/metrics` on loopback.
pub fn http_get(url: &str) -> anyhow::Result<(u16, String)> {
    http_request("GET", url, &[], b"")
}

/// `POST url` with `headers` and `body`, as [`http_get`] does a GET.
pub fn http_post(
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> anyhow::Result<(u16, String)> {
    http_request("POST", url, headers, body)
}

fn http_request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> anyhow::Result<(u16, String)> {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/readyz"),
    };
    let addr = authority
        .to_socket_addrs()
        .with_context(|| format!("resolving {authority}"))?
        .next()
        .with_context(|| format!("{authority} resolved to no address"))?;
    // Health probes fail fast; a hook's answer waits for its commit.
    let timeout = Duration::from_secs(if method == "GET" { 2 } else { 10 });
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    // One write, so a server that reads the request in one go sees all of it.
    let mut request =
        format!("{method} {path} HTTP/1.0\r\nHost: {authority}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if method != "GET" {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_ref(), ""));
    let status_line = head.lines().next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .with_context(|| format!("bad HTTP status line from {url}: {status_line:?}"))?;
    Ok((status, body.to_string()))
}

/// Last `n` lines of `s`, for error messages.
/// The last `n` lines of a log; when a thread panicked, from its panic message on
/// instead (a backtrace is longer than `n`, and the message is what says why).
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines
        .iter()
        .rposition(|line| line.contains("panicked at"))
        .map_or(lines.len().saturating_sub(n), |panic| {
            panic.saturating_sub(5)
        });
    lines[start..lines.len().min(start + n.max(60))].join("\n")
}

/// `memory-daemon --data-dir DATA serve` on `nats_url` with `/metrics` on a free
/// loopback port and `env`, once `/readyz` answers; returns it with that address.
pub fn serve_daemon(
    nats_url: &str,
    data_dir: &Path,
    env: &[(&str, &str)],
) -> anyhow::Result<(Daemon, String)> {
    serve_daemon_on(nats_url, data_dir, free_port(), env)
}

/// [`serve_daemon`] with `/metrics` on `metrics_port` (a restart keeps its port).
pub fn serve_daemon_on(
    nats_url: &str,
    data_dir: &Path,
    metrics_port: u16,
    env: &[(&str, &str)],
) -> anyhow::Result<(Daemon, String)> {
    let (mut daemon, metrics) = spawn_serve(nats_url, data_dir, metrics_port, env)?;
    daemon.wait_ready(&format!("http://{metrics}/readyz"), Duration::from_secs(60))?;
    Ok((daemon, metrics))
}

/// `serve` on `data_dir` with `/metrics` on `metrics_port`, without waiting for it to be
/// ready (for a daemon expected to refuse, or several started at once).
pub fn spawn_serve(
    nats_url: &str,
    data_dir: &Path,
    metrics_port: u16,
    env: &[(&str, &str)],
) -> anyhow::Result<(Daemon, String)> {
    let metrics = format!("127.0.0.1:{metrics_port}");
    let data = data_dir.to_string_lossy().into_owned();
    let args = [
        "--data-dir",
        &data,
        "serve",
        "--nats-url",
        nats_url,
        "--metrics-listen",
        &metrics,
    ];
    let daemon = Daemon::start_with_env(&build_daemon()?, &args, env)?;
    Ok((daemon, metrics))
}

/// Three nats-servers clustered on loopback (with the account `mapping`, or none),
/// `cluster init` with 8 partitions, all of them assigned to group `g1`: the cluster and
/// its URLs.
pub fn one_group_cluster(mapping: &str) -> anyhow::Result<(NatsCluster, String)> {
    let nats = NatsCluster::start(3, mapping)?;
    let urls = nats.urls();
    cluster_cli(&["init", "--partitions", "8"], &urls)?;
    cluster_cli(&["assign", "--group", "g1", "--partitions", "0-7"], &urls)?;
    Ok((nats, urls))
}

/// The environment that points a daemon at a scripted OpenAI-compatible server
/// (`memory_llm::testing::ScriptedServer`) as the model `scripted-model`, without
/// retries (a test's script counts every request).
#[must_use]
pub fn scripted_llm_env(base_url: &str) -> [(&'static str, &str); 4] {
    [
        ("AGENT_MEMORY_LLM__ENABLED", "true"),
        ("AGENT_MEMORY_LLM__BASE_URL", base_url),
        ("AGENT_MEMORY_LLM__MODEL", "scripted-model"),
        ("AGENT_MEMORY_LLM__MAX_RETRIES", "0"),
    ]
}

/// `memory-daemon cluster <args> --nats-url <urls>`: its stdout, or an error with its
/// stderr.
pub fn cluster_cli(args: &[&str], urls: &str) -> anyhow::Result<String> {
    let output = Command::new(build_daemon()?)
        .arg("cluster")
        .args(args)
        .args(["--nats-url", urls])
        .output()?;
    if !output.status.success() {
        bail!(
            "cluster {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// `serve --cluster --node-id NODE --group GROUP [extra…]` on `data_dir` (the vector
/// index off: embedding is not what the cluster tests are about) with `env`, started
/// and not waited for; returns it with its metrics address.
pub fn spawn_replica(
    nats_urls: &str,
    data_dir: &Path,
    (node, group): (&str, &str),
    extra: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<(Daemon, String)> {
    let metrics = format!("127.0.0.1:{}", free_port());
    let data = data_dir.to_string_lossy().into_owned();
    let args = [
        "--data-dir",
        &data,
        "serve",
        "--cluster",
        "--node-id",
        node,
        "--group",
        group,
        "--nats-url",
        nats_urls,
        "--metrics-listen",
        &metrics,
    ];
    let daemon = Daemon::start_with_env(
        &build_daemon()?,
        &[&args[..], extra].concat(),
        &[&[("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false")], env].concat(),
    )?;
    Ok((daemon, metrics))
}

/// [`spawn_replica`] without extra arguments, once `/readyz` answers.
pub fn serve_replica(
    nats_urls: &str,
    data_dir: &Path,
    node_group: (&str, &str),
    env: &[(&str, &str)],
) -> anyhow::Result<(Daemon, String)> {
    let (mut daemon, metrics) = spawn_replica(nats_urls, data_dir, node_group, &[], env)?;
    daemon.wait_ready(&format!("http://{metrics}/readyz"), Duration::from_secs(60))?;
    Ok((daemon, metrics))
}

/// Waits up to 20 s until JetStream holds `stream` (the daemon makes it at start).
pub async fn wait_for_stream(client: &async_nats::Client, stream: &str) -> anyhow::Result<()> {
    let jetstream = async_nats::jetstream::new(client.clone());
    let deadline = Instant::now() + Duration::from_secs(20);
    while jetstream.get_stream(stream).await.is_err() {
        if Instant::now() > deadline {
            bail!("stream {stream} never appeared");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Every stored event of `project`, via the CLI's embedded export (the daemon must be
/// stopped: one process owns a data dir).
pub fn export_events(data_dir: &Path, project: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    let output = Command::new(build_daemon()?)
        .args([
            "--data-dir",
            &data_dir.to_string_lossy(),
            "events",
            "export",
            "--project",
            project,
        ])
        .output()?;
    if !output.status.success() {
        bail!("export failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    String::from_utf8(output.stdout)?
        .lines()
        .map(|line| Ok(serde_json::from_str(line)?))
        .collect()
}

/// [`export_events`] without each event's `seq`: a replica's own outbox position, which
/// differs between replicas holding the same events.
pub fn export_events_without_seq(
    data_dir: &Path,
    project: &str,
) -> anyhow::Result<Vec<serde_json::Value>> {
    Ok(export_events(data_dir, project)?
        .into_iter()
        .map(|mut event| {
            event.as_object_mut().map(|o| o.remove("seq"));
            event
        })
        .collect())
}

/// The sum of a Prometheus metric's samples in `text` (a `/metrics` page) whose labels
/// include every one of `labels` (`name="value"` strings).
#[must_use]
pub fn metric_sum(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(name) && !line.starts_with('#'))
        .filter(|line| {
            let rest = &line[name.len()..];
            (rest.starts_with('{') || rest.starts_with(' '))
                && labels.iter().all(|label| line.contains(label))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A JSON request over NATS and its JSON reply, within 30 s.
pub async fn request_json(
    client: &async_nats::Client,
    subject: &str,
    body: &serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let reply = tokio::time::timeout(
        Duration::from_secs(30),
        client.request(subject.to_owned(), serde_json::to_vec(body)?.into()),
    )
    .await
    .with_context(|| format!("{subject} timed out"))??;
    Ok(serde_json::from_slice(&reply.payload)?)
}

/// Every file under `dir` whose bytes hold `needle`: where a secret that must be gone
/// still is.
pub fn files_holding(dir: &Path, needle: &str) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                stack.push(entry?.path());
            }
        } else if std::fs::read(&path)?
            .windows(needle.len())
            .any(|window| window == needle.as_bytes())
        {
            found.push(path.display().to_string());
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    const TIMEOUT: Duration = Duration::from_secs(10);

    #[test]
    fn a_log_tail_starts_at_the_panic_message() {
        let log: Vec<String> = (0..10)
            .map(|i| format!("line {i}"))
            .chain([
                "thread 'main' panicked at src/x.rs:1:1:".to_owned(),
                "why".to_owned(),
            ])
            .chain((0..100).map(|i| format!("  {i}: frame")))
            .collect();
        let shown = tail(&log.join("\n"), 40);
        assert!(shown.starts_with("line 5\n"), "{shown}");
        assert!(shown.contains("panicked at src/x.rs:1:1:\nwhy"), "{shown}");
        let quiet: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
        let shown = tail(&quiet.join("\n"), 3);
        assert_eq!(shown, "line 97\nline 98\nline 99");
    }

    #[tokio::test]
    async fn nats_server_serves_request_reply_and_jetstream() -> anyhow::Result<()> {
        let server = NatsServer::start()?;
        assert!(server.url().ends_with(&format!(":{}", server.port())));
        let client = server.connect().await?;

        // Request/reply against a responder we spawn.
        let mut sub = client.subscribe("harness.echo").await?;
        let responder = client.clone();
        let echo = tokio::spawn(async move {
            while let Some(msg) = sub.next().await {
                if let Some(reply) = msg.reply {
                    let mut payload = b"echo:".to_vec();
                    payload.extend_from_slice(&msg.payload);
                    responder.publish(reply, payload.into()).await?;
                }
            }
            anyhow::Ok(())
        });
        client.flush().await?;
        let reply =
            tokio::time::timeout(TIMEOUT, client.request("harness.echo", "ping".into())).await??;
        assert_eq!(&reply.payload[..], b"echo:ping");
        echo.abort();

        // JetStream is enabled: account info answers, and a stream round-trips.
        let js = async_nats::jetstream::new(client.clone());
        let account = js.query_account().await?;
        assert_eq!(account.streams, 0);
        let stream = js
            .create_stream(async_nats::jetstream::stream::Config {
                name: "HARNESS".to_string(),
                subjects: vec!["harness.js.>".to_string()],
                ..Default::default()
            })
            .await?;
        let ack = js.publish("harness.js.one", "event".into()).await?.await?;
        assert_eq!(ack.stream, "HARNESS");
        assert_eq!(stream.get_info().await?.state.messages, 1);
        assert!(server.store_dir().exists());
        Ok(())
    }

    #[tokio::test]
    async fn restart_keeps_port_and_jetstream_data_and_clients_reconnect() -> anyhow::Result<()> {
        let mut server = NatsServer::start()?;
        let url = server.url();
        let client = server.connect().await?;
        let js = async_nats::jetstream::new(client.clone());
        js.create_stream(async_nats::jetstream::stream::Config {
            name: "DURABLE".to_string(),
            subjects: vec!["durable.>".to_string()],
            ..Default::default()
        })
        .await
        .context("create stream")?;
        js.publish("durable.a", "1".into())
            .await?
            .await
            .context("publish before restart")?;

        server.restart()?;
        assert_eq!(server.url(), url);
        assert!(server.is_running());

        // The same client reconnects by itself. A request sent before it has
        // noticed the old connection died is lost, so each try gets a short
        // timeout and we retry until the overall deadline — 30 s: async-nats backs
        // off between reconnects, by seconds once a few attempts failed while the
        // server restarted on a loaded machine.
        let deadline = Instant::now() + Duration::from_secs(30);
        let info = loop {
            let attempt = tokio::time::timeout(Duration::from_secs(1), async {
                anyhow::Ok(js.get_stream("DURABLE").await?.get_info().await?)
            })
            .await
            .unwrap_or_else(|elapsed| Err(elapsed.into()));
            match attempt {
                Ok(info) => break info,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => {
                    return Err(e.context(format!(
                        "stream not reachable after restart; nats log:\n{}",
                        tail(&server.log(), LOG_TAIL_LINES)
                    )));
                }
            }
        };
        assert_eq!(info.state.messages, 1, "JetStream data survives a restart");
        assert!(server.log().contains("Server is ready"));

        server.stop();
        assert!(!server.is_running());
        server.start_again()?;
        assert!(server.is_running());
        Ok(())
    }

    #[test]
    fn free_ports_are_bindable() {
        let port = free_port();
        assert_ne!(port, 0);
        assert!(TcpListener::bind(("127.0.0.1", port)).is_ok());
    }

    #[test]
    fn daemon_captures_output_and_terminates_on_sigterm() -> anyhow::Result<()> {
        // A stand-in process: prints, then exits 0 on SIGTERM like a graceful daemon.
        let script = "echo started; echo warming >&2; trap 'echo bye; exit 0' TERM; \
                      while :; do sleep 0.05; done";
        let mut d = Daemon::start(Path::new("/bin/sh"), &["-c", script])?;
        let deadline = Instant::now() + TIMEOUT;
        while !d.stdout().contains("started") || !d.stderr().contains("warming") {
            assert!(Instant::now() < deadline, "no output captured");
            std::thread::sleep(POLL);
        }
        assert!(d.try_status()?.is_none());
        let status = d.terminate_within(TIMEOUT)?;
        assert!(status.success(), "graceful exit, got {status}");
        assert!(d.stdout().contains("bye"));
        Ok(())
    }

    #[test]
    fn daemon_kill_9_and_terminate_timeout() -> anyhow::Result<()> {
        // `exec` so the shell *is* the sleeping process; the ignored SIGTERM
        // disposition survives exec.
        let mut d = Daemon::start(Path::new("/bin/sh"), &["-c", "trap '' TERM; exec sleep 30"])?;
        std::thread::sleep(Duration::from_millis(100));
        // SIGTERM is ignored, so terminate_within must give up and kill it.
        assert!(d.terminate_within(Duration::from_millis(300)).is_err());
        let status = d.try_status()?.context("killed and reaped")?;
        assert!(!status.success());

        let mut d = Daemon::start(Path::new("/bin/sh"), &["-c", "exec sleep 30"])?;
        let status = d.kill_9()?;
        assert!(!status.success());
        // Idempotent: the remembered status comes back.
        assert_eq!(d.kill_9()?, status);
        Ok(())
    }

    #[test]
    fn daemon_start_reports_missing_binary() {
        let err = Daemon::start(Path::new("/nonexistent/memory-daemon"), &[]);
        assert!(err.is_err());
    }

    #[test]
    fn wait_http_ok_polls_until_200() -> anyhow::Result<()> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        // First connection: 503, then 200 — like a daemon becoming ready.
        let server = std::thread::spawn(move || -> anyhow::Result<String> {
            let mut first_request = String::new();
            for (i, conn) in listener.incoming().take(2).enumerate() {
                let mut conn = conn?;
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.ends_with(b"\r\n\r\n") {
                    let n = conn.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                if i == 0 {
                    first_request = String::from_utf8_lossy(&request).into_owned();
                    conn.write_all(b"HTTP/1.0 503 Service Unavailable\r\n\r\nnot yet")?;
                } else {
                    conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nready")?;
                }
            }
            Ok(first_request)
        });
        wait_http_ok(&format!("http://127.0.0.1:{port}/readyz"), TIMEOUT)?;
        let request = server
            .join()
            .map_err(|_| anyhow::anyhow!("server panicked"))??;
        assert!(
            request.starts_with("GET /readyz HTTP/1.0\r\n"),
            "{request:?}"
        );

        // Nothing listening: times out with an error, quickly.
        let dead = free_port();
        assert!(wait_http_ok(&format!("127.0.0.1:{dead}"), Duration::from_millis(200)).is_err());
        Ok(())
    }

    #[test]
    fn daemon_binary_prefers_explicit_then_newest() -> anyhow::Result<()> {
        let tmp = TempDir::new()?;
        let target = tmp.path();
        assert_eq!(
            pick_daemon_binary(Some("/opt/md".into()), target),
            PathBuf::from("/opt/md")
        );
        // Nothing built: the debug path, so errors name what was expected.
        assert_eq!(
            pick_daemon_binary(None, target),
            target.join("debug/memory-daemon")
        );

        std::fs::create_dir_all(target.join("release"))?;
        std::fs::write(target.join("release/memory-daemon"), b"")?;
        assert_eq!(
            pick_daemon_binary(None, target),
            target.join("release/memory-daemon")
        );

        std::fs::create_dir_all(target.join("debug"))?;
        let debug = target.join("debug/memory-daemon");
        std::fs::write(&debug, b"")?;
        let newer = SystemTime::now() + Duration::from_secs(60);
        File::options()
            .write(true)
            .open(&debug)?
            .set_modified(newer)?;
        assert_eq!(pick_daemon_binary(None, target), debug);
        Ok(())
    }
}
