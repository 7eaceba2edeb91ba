//! The crash soak (issue 18; `make soak`, `benches/run-soak.sh`): N trials (default
//! 100) against the real daemon binary, one private nats-server and one data dir that
//! grows from trial to trial. Each trial:
//! 1. starts the daemon on the data dir and waits until `/readyz` answers;
//! 2. runs mixed load on the year generator's coding sessions (four projects): two
//!    request/reply producers (`memory.ingest.<project>`, 1–8 events a request, each
//!    event acknowledged by the reply), one JetStream producer (`memory.events.<project>`,
//!    acknowledged by its PubAck; the daemon consumes the stream, across its crashes),
//!    a query loop (the benches' TOC mix, `search`, keyword, vector and ideas calls), and
//!    in some trials an online admin call: a BM25 rebuild, an ideas backfill (heuristic
//!    engine: no model), a TOC or an ideas rebuild. The vector index seals and merges on
//!    its own (`seal_threshold` 300 here, so most trials seal and some merge). JetStream
//!    redelivers after 5 s (`ack_wait_secs`) instead of 30;
//! 3. `kill -9`s the daemon at a random moment (up to two seconds after the load ends),
//!    starts it again, sends again every request that got no reply and every publish
//!    without a PubAck (the same event ids), waits until JetStream is drained and every
//!    consumer is at the outbox head, and stops it with SIGTERM;
//! 4. checks the stopped data dir: every acknowledged event present exactly once with
//!    its text (`events export`), no event twice, and `admin verify` — every consumer
//!    caught up, both indexes healthy, every projection equal to a rebuild from the log
//!    and each index holding the documents the log implies.
//!
//! It prints one line per trial and `trials=N lost=L dup=D diverged=V` (lost and
//! duplicated events over the run, trials whose state diverged from the rebuild), then
//! the other failures; it exits 1 when any trial failed. Everything random comes from
//! `--seed` (printed; each trial's seed too): the sessions, each trial's load length,
//! kill moment and admin call, the producers' batch sizes and pauses. What the daemon
//! acknowledged before the kill depends on timing as well, so a rerun with the same seed
//! makes the same choices, not the same interleaving.

#[path = "soak/check.rs"]
mod check;
#[path = "soak/feed.rs"]
mod feed;
#[path = "soak/load.rs"]
mod load;
#[path = "soak/stack.rs"]
mod stack;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use memory_benches::year::Rng;
use tokio::sync::watch;

use crate::feed::{EventKey, Feed, Ledger};
use crate::load::{
    AdminOp, LoadStats, Producer, Shared, Transport, admin_call, admin_call_now, query_loop,
};
use crate::stack::Stack;

/// The vector index's seal threshold under the soak: small, so most trials seal a
/// segment and merges follow (the default, 2 000, would seal every few trials).
const SEAL_THRESHOLD: &str = "300";
/// JetStream's redelivery delay under the soak: messages delivered to the killed daemon
/// come back after it (the default, 30 s, would make most trials wait that long); the
/// daemon acknowledges within milliseconds of its commit, so 5 s only makes redelivery
/// of a slow commit — deduplicated by event id — likelier.
const ACK_WAIT_SECS: &str = "5";

#[derive(Parser)]
#[command(about = "agent-memory crash soak: load, kill -9, restart, check; N times")]
struct Cli {
    /// The daemon binary (the release build).
    #[arg(long)]
    daemon_bin: PathBuf,
    /// Trials.
    #[arg(long, default_value_t = 100)]
    trials: usize,
    /// Seed of every choice (default: the clock's).
    #[arg(long)]
    seed: Option<u64>,
    /// Where the data dir, logs and failed trials' reports go (default: a new dir under
    /// the system's temp dir). Removed at the end when every trial passed, unless
    /// `--keep`.
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Keep the work dir even when every trial passed.
    #[arg(long)]
    keep: bool,
    /// Shortest load of a trial, seconds.
    #[arg(long, default_value_t = 2.0)]
    min_load_secs: f64,
    /// Longest load of a trial, seconds.
    #[arg(long, default_value_t = 8.0)]
    max_load_secs: f64,
    /// Multiplies the producers' send rates.
    #[arg(long, default_value_t = 1.0)]
    rate: f64,
    /// Longest wait for the daemon to catch up after its restart, seconds.
    #[arg(long, default_value_t = 900)]
    catch_up_timeout_secs: u64,
    /// Run without the vector index (faster; no embedding, no seals).
    #[arg(long)]
    no_vector: bool,
}

/// One trial's random choices.
struct TrialPlan {
    seed: u64,
    load: Duration,
    kill_at: Duration,
    op: Option<(AdminOp, Duration)>,
}

impl TrialPlan {
    fn new(seed: u64, cli: &Cli) -> TrialPlan {
        let mut rng = Rng::new(seed);
        let uniform = |rng: &mut Rng, low: f64, high: f64| {
            let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            Duration::from_secs_f64(low + unit * (high - low).max(0.0))
        };
        let load = uniform(&mut rng, cli.min_load_secs, cli.max_load_secs);
        let kill_at = uniform(&mut rng, 0.1, load.as_secs_f64() + 2.0);
        let op = match rng.range(0, 9) {
            0 | 1 => Some(AdminOp::Bm25Rebuild),
            2 | 3 => Some(AdminOp::IdeasBackfill),
            4 => Some(AdminOp::TocRebuild),
            5 => Some(AdminOp::IdeasRebuild),
            _ => None,
        }
        .map(|op| {
            let before = load.min(kill_at).as_secs_f64();
            (op, uniform(&mut rng, 0.0, before))
        });
        TrialPlan {
            seed,
            load,
            kill_at,
            op,
        }
    }
}

/// What went wrong over the run.
#[derive(Default)]
struct Totals {
    lost: BTreeSet<EventKey>,
    duplicated: BTreeSet<EventKey>,
    changed: BTreeSet<EventKey>,
    diverged_trials: usize,
    behind_trials: usize,
    unhealthy_trials: usize,
    failed_trials: Vec<usize>,
    rejected: u64,
    internal_errors: u64,
    other_failures: Vec<String>,
    /// Backfills that finished before the kill (the graph then rebuilt in log order).
    backfills_completed: usize,
    /// Backfills the kill cut short (carried on by the restarted agent, then the graph
    /// rebuilt in log order).
    backfills_killed: usize,
    /// Trials after which the state was mended before the next trial's load.
    healed: usize,
    /// Trials whose `status` reported an index behind that was not.
    stale_mirror_trials: usize,
}

/// The online rebuilds that mend what a trial's `admin verify` found diverged, in the
/// order they run: the ideas graph and the TOC from the log, then the BM25 index from
/// them, and the vector index only when nothing it is built from diverged (its idea and
/// node documents follow the other rebuilds on their own). So the next trial tests a
/// consistent state instead of inheriting the last one's difference.
fn healing(diverged: &[String]) -> Vec<AdminOp> {
    let mut ops = Vec::new();
    let has = |name: &str| diverged.iter().any(|part| part == name);
    if has("ideas") {
        ops.push(AdminOp::IdeasRebuild);
    }
    let toc = diverged.iter().any(|part| {
        memory_projections::verify::TOC_PARTS.contains(&part.as_str()) || part == "catalog"
    });
    if toc {
        ops.push(AdminOp::TocRebuild);
    }
    if has("bm25_documents") {
        ops.push(AdminOp::Bm25Rebuild);
    }
    if has("vector_documents") && !has("ideas") && !toc {
        ops.push(AdminOp::VectorRebuild);
    }
    ops
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("soak stopped: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn blocking<T>(work: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(work)
}

async fn run(cli: Cli) -> anyhow::Result<bool> {
    let seed = cli.seed.unwrap_or_else(memory_types::now_ms);
    let work = match &cli.work_dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("memory-soak-{seed}")),
    };
    if work.exists() {
        std::fs::remove_dir_all(&work)
            .with_context(|| format!("cannot empty {}", work.display()))?;
    }
    std::fs::create_dir_all(&work)?;
    let data_dir = work.join("data");
    let mut env = vec![
        (
            "AGENT_MEMORY_TELEPORT__VECTOR__SEAL_THRESHOLD".to_owned(),
            SEAL_THRESHOLD.to_owned(),
        ),
        (
            "AGENT_MEMORY_NATS__JETSTREAM__ACK_WAIT_SECS".to_owned(),
            ACK_WAIT_SECS.to_owned(),
        ),
    ];
    if cli.no_vector {
        env.push((
            "AGENT_MEMORY_TELEPORT__VECTOR__ENABLED".to_owned(),
            "false".to_owned(),
        ));
    }
    println!(
        "soak: seed={seed} trials={} daemon={} work={} vector={} ({} cores)",
        cli.trials,
        cli.daemon_bin.display(),
        work.display(),
        if cli.no_vector { "off" } else { "on" },
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
    );
    let started = Instant::now();
    let mut stack = Stack::new(&cli.daemon_bin, &data_dir, env, &work.join("daemon.log")).await?;
    let mut master = Rng::new(seed);
    // About 1 500 events a trial at most: the feed does not run dry.
    let feed = Arc::new(Feed::new(master.next_u64(), cli.trials.max(1) * 1_500));
    let shared = Shared {
        client: stack.client.clone(),
        feed: feed.clone(),
        ledger: Arc::new(Mutex::new(Ledger::default())),
        stats: Arc::new(Mutex::new(LoadStats::default())),
    };
    let mut producers: Vec<Producer> = [
        Transport::RequestReply,
        Transport::RequestReply,
        Transport::JetStream,
    ]
    .into_iter()
    .map(|transport| Producer::new(transport, master.next_u64(), cli.rate))
    .collect();
    let mut totals = Totals::default();
    let mut heal = Vec::new();
    for trial in 1..=cli.trials {
        let plan = TrialPlan::new(master.next_u64(), &cli);
        let ran = run_trial(
            trial,
            &plan,
            &cli,
            &mut stack,
            &shared,
            &mut producers,
            &mut totals,
            &work,
            &heal,
        )
        .await;
        match ran {
            Ok((passed, diverged)) => {
                if !passed {
                    totals.failed_trials.push(trial);
                }
                heal = healing(&diverged);
            }
            Err(err) => {
                println!("trial {trial:>3} seed={:#018x} ABORTED: {err:#}", plan.seed);
                totals.failed_trials.push(trial);
                totals
                    .other_failures
                    .push(format!("trial {trial}: {err:#}"));
                break;
            }
        }
    }
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    println!(
        "trials={} lost={} dup={} diverged={}",
        cli.trials,
        totals.lost.len(),
        totals.duplicated.len(),
        totals.diverged_trials
    );
    println!(
        "also: failed trials {:?}, behind {}, unhealthy {}, stale index lag in status {}, changed text {}, rejected {}, internal query errors {}; backfills {} completed, {} killed; {} trials mended by rebuilds before the next; {} events acknowledged; {minutes:.1} min; seed {seed}",
        totals.failed_trials,
        totals.behind_trials,
        totals.unhealthy_trials,
        totals.stale_mirror_trials,
        totals.changed.len(),
        totals.rejected,
        totals.internal_errors,
        totals.backfills_completed,
        totals.backfills_killed,
        totals.healed,
        shared
            .ledger
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .num_acked(),
    );
    for failure in &totals.other_failures {
        println!("  {failure}");
    }
    let passed = totals.failed_trials.is_empty();
    if passed && !cli.keep {
        drop(stack);
        let _ = std::fs::remove_dir_all(&work);
    } else {
        println!("work dir kept: {}", work.display());
    }
    Ok(passed)
}

/// One trial; whether it passed. An error stops the soak (the daemon did not start, a
/// check could not run).
#[allow(clippy::too_many_arguments)]
async fn run_trial(
    trial: usize,
    plan: &TrialPlan,
    cli: &Cli,
    stack: &mut Stack,
    shared: &Shared,
    producers: &mut Vec<Producer>,
    totals: &mut Totals,
    work: &std::path::Path,
    heal: &[AdminOp],
) -> anyhow::Result<(bool, Vec<String>)> {
    let trial_started = Instant::now();
    *shared
        .stats
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = LoadStats::default();
    let acked_before = shared
        .ledger
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .num_acked();
    blocking(|| stack.start(&format!("trial {trial} start")))?;
    if !heal.is_empty() {
        let mut outcomes = Vec::new();
        for op in heal {
            let outcome = admin_call_now(shared.client.clone(), *op).await;
            stack
                .wait_caught_up(Duration::from_secs(cli.catch_up_timeout_secs))
                .await?;
            outcomes.push(format!("{} ({outcome})", op.name()));
        }
        totals.healed += 1;
        println!(
            "          mended before trial {trial}'s load: {}",
            outcomes.join(", ")
        );
    }

    // The load, and the kill at its moment.
    let load_started = Instant::now();
    let until = load_started + plan.load;
    let (kill_tx, kill_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    for (index, mut producer) in producers.drain(..).enumerate() {
        let shared = shared.clone();
        // Request/reply producers stop at the kill; the JetStream producer goes on to
        // the load's end: NATS takes what the daemon will consume after its restart.
        let stop = if producer.transport == Transport::RequestReply {
            kill_rx.clone()
        } else {
            watch::channel(false).1
        };
        tasks.push(tokio::spawn(async move {
            producer.run(&shared, until, stop).await;
            (index, producer)
        }));
    }
    let queries = tokio::spawn(query_loop(
        shared.clone(),
        plan.seed ^ 0x51,
        until,
        kill_rx.clone(),
    ));
    let op = plan.op.map(|(op, after)| {
        tokio::spawn(admin_call(
            shared.client.clone(),
            op,
            after,
            kill_rx.clone(),
        ))
    });
    tokio::time::sleep_until((load_started + plan.kill_at).into()).await;
    let seals_before_kill = stack.metric("hnsw_seal_duration_seconds_count");
    blocking(|| stack.kill_9(&format!("trial {trial} kill at {:?}", plan.kill_at)))?;
    let _ = kill_tx.send(true);
    let mut returned = Vec::new();
    for task in tasks {
        returned.push(task.await?);
    }
    returned.sort_by_key(|(index, _)| *index);
    producers.extend(returned.into_iter().map(|(_, producer)| producer));
    queries.await?;
    let op_outcome = match op {
        Some(task) => Some(task.await?),
        None => None,
    };

    // The restart: everything unacknowledged again, then catch-up.
    blocking(|| stack.start(&format!("trial {trial} restart")))?;
    let resend_until = Instant::now() + Duration::from_secs(120);
    let (mut resends, mut still_unacked) = (0, 0);
    for producer in producers.iter_mut() {
        let (sends, left) = producer.resend(shared, resend_until).await;
        resends += sends;
        still_unacked += left;
    }
    let caught_up_started = Instant::now();
    let mut caught_up = stack
        .wait_caught_up(Duration::from_secs(cli.catch_up_timeout_secs))
        .await;
    // A backfill made the ideas graph in session order, which links sessions
    // differently from the log order a rebuild follows (docs/operations.md, and verify
    // says so): rebuilt in log order here, so the check compares like with like. One the
    // kill cut short was carried on by the restarted agent, and catch-up waited for it
    // to finish (`status` names an unfinished backfill).
    let backfill = match (&plan.op, &op_outcome) {
        (Some((AdminOp::IdeasBackfill, _)), Some(outcome))
            if outcome.starts_with("ok") || outcome.starts_with("killed") =>
        {
            if outcome.starts_with("ok") {
                totals.backfills_completed += 1;
            } else {
                totals.backfills_killed += 1;
            }
            let outcome = admin_call_now(shared.client.clone(), AdminOp::IdeasRebuild).await;
            caught_up = stack
                .wait_caught_up(Duration::from_secs(cli.catch_up_timeout_secs))
                .await;
            format!(" then ideas-rebuild ({outcome})")
        }
        _ => String::new(),
    };
    let catch_up_secs = caught_up_started.elapsed().as_secs_f64();
    let last_lagging = caught_up
        .as_ref()
        .map(|progress| progress.last_lagging.join(","))
        .unwrap_or_default();
    let seals = seals_before_kill + stack.metric("hnsw_seal_duration_seconds_count");
    let stopped = blocking(|| stack.terminate(&format!("trial {trial} stop")));

    // The checks, on the stopped data dir.
    let (bin, data_dir, env) = (&cli.daemon_bin, work.join("data"), stack.env().to_vec());
    let events = {
        let ledger = shared
            .ledger
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        blocking(|| check::check_events(bin, &data_dir, &env, &ledger))?
    };
    let verified = blocking(|| check::verify(bin, &data_dir, &env, &work.join("scratch")))?;
    let stats = std::mem::take(
        &mut *shared
            .stats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );

    let new_lost = events.lost.difference(&totals.lost).count();
    let new_dup = events.duplicated.difference(&totals.duplicated).count();
    let mut failures = Vec::new();
    if !events.lost.is_empty() {
        failures.push(format!(
            "lost {} (first {:?})",
            events.lost.len(),
            events.lost.first()
        ));
    }
    if !events.duplicated.is_empty() {
        failures.push(format!(
            "dup {} (first {:?})",
            events.duplicated.len(),
            events.duplicated.first()
        ));
    }
    if !events.changed.is_empty() {
        failures.push(format!(
            "changed {} (first {:?})",
            events.changed.len(),
            events.changed.first()
        ));
    }
    if !verified.diverged.is_empty() {
        failures.push(format!("diverged {:?}", verified.diverged));
        totals.diverged_trials += 1;
    }
    if !verified.behind.is_empty() {
        failures.push(format!("behind {:?}", verified.behind));
        totals.behind_trials += 1;
    }
    if !verified.unhealthy.is_empty() {
        failures.push(format!("unhealthy {:?}", verified.unhealthy));
        totals.unhealthy_trials += 1;
    }
    if verified.dead_letters > 0 {
        failures.push(format!("{} dead letters", verified.dead_letters));
    }
    if let Ok(progress) = &caught_up
        && !progress.stale_mirrors.is_empty()
    {
        totals.stale_mirror_trials += 1;
        failures.push(format!(
            "status reports index lag {:?} while the indexes' own commits are at the head \
             (the cursor mirrored into the store is stale)",
            progress.stale_mirrors
        ));
    }
    if let Err(err) = &caught_up {
        failures.push(format!("catch-up: {err:#}"));
    }
    if let Err(err) = &stopped {
        failures.push(format!("stop: {err:#}"));
    }
    if still_unacked > 0 {
        failures.push(format!(
            "{still_unacked} sends never acknowledged after the restart"
        ));
    }
    if stats.rejected > 0 {
        failures.push(format!(
            "rejected {} ({})",
            stats.rejected,
            stats.rejected_example.as_deref().unwrap_or_default()
        ));
    }
    if stats.internal_errors() > 0 {
        failures.push(format!(
            "internal query errors {} ({})",
            stats.internal_errors(),
            stats.internal_example.as_deref().unwrap_or_default()
        ));
    }
    if !verified.ok && failures.is_empty() {
        failures.push("admin verify failed".to_owned());
    }
    totals.lost.extend(events.lost.iter().cloned());
    totals.duplicated.extend(events.duplicated.iter().cloned());
    totals.changed.extend(events.changed.iter().cloned());
    totals.rejected += stats.rejected;
    totals.internal_errors += stats.internal_errors();
    if !verified.ok || !failures.is_empty() {
        std::fs::write(
            work.join(format!("verify-trial-{trial}.json")),
            &verified.report,
        )?;
    }

    let acked_now = shared
        .ledger
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .num_acked();
    let op_text = match (&plan.op, &op_outcome) {
        (Some((op, at)), Some(outcome)) => {
            format!(
                "{}@{:.1}s({outcome}){backfill}",
                op.name(),
                at.as_secs_f64()
            )
        }
        _ => "none".to_owned(),
    };
    let query_errors: Vec<String> = stats
        .query_errors
        .iter()
        .map(|(code, count)| format!("{code} {count}"))
        .collect();
    println!(
        "trial {trial:>3} seed={:#018x} load={:.1}s kill={:.2}s op={op_text} acked=+{} (rr {} js {}) resent={resends} events={} q={}ok/[{}]/{}none hnsw={} catchup={catch_up_secs:.1}s({last_lagging}) verify={:.1}s trial={:.0}s lost={} dup={} {}",
        plan.seed,
        plan.load.as_secs_f64(),
        plan.kill_at.as_secs_f64(),
        acked_now - acked_before,
        stats.acked_rr,
        stats.acked_js,
        events.stored,
        stats.queries_ok,
        query_errors.join(","),
        stats.queries_unanswered,
        seals,
        verified.rebuild_secs,
        trial_started.elapsed().as_secs_f64(),
        new_lost,
        new_dup,
        if failures.is_empty() {
            "ok".to_owned()
        } else {
            format!("FAILED: {}", failures.join("; "))
        },
    );
    for reason in &verified.not_compared {
        println!("          not compared: {reason}");
    }
    if shared.feed.remaining() == 0 {
        println!("          the feed ran dry: producers idle");
    }
    Ok((failures.is_empty(), verified.diverged))
}
