//! `teleport`: `teleport.search` and `search` latency and server time with questions made from the year.

use std::sync::Arc;

use anyhow::{Context, bail};
use bytes::Bytes;
use memory_benches::percentile;
use memory_benches::questions::{QUESTION_SEED, question_from};
use memory_benches::toc_mix::latency_line;
use memory_benches::year::{Rng, YEAR_NOW, YEAR_PROJECTS, YearEvent, YearSpec, generate};

use crate::cli::TeleportArgs;
use crate::closed_loop::{ReplyCheck, closed_loop};

/// One question, asked in one project.
pub(super) struct Question {
    pub(super) project: &'static str,
    pub(super) text: String,
}

/// `per_project` natural-language questions per project, made deterministically from the
/// words of random indexed events of that project (the templates and word choice of the
/// in-process `bm25` bench: 2–4 content words of one event in a question; one in ten
/// each with an apostrophe, a colon, parentheses, or a code identifier or path), then
/// interleaved so that consecutive questions go to the projects in turn.
pub(super) fn year_questions(events: &[YearEvent], per_project: usize) -> Vec<Question> {
    let mut per: Vec<Vec<Question>> = Vec::new();
    for (index, (project, _)) in YEAR_PROJECTS.iter().enumerate() {
        // What the indexer indexes (`memory_search::documents::event_doc`).
        let docs: Vec<&YearEvent> = events
            .iter()
            .filter(|event| {
                event.project == *project
                    && !event.text.trim().is_empty()
                    && !matches!(event.kind, "session_start" | "session_end")
            })
            .collect();
        if docs.is_empty() {
            continue;
        }
        let mut rng = Rng::new(QUESTION_SEED + index as u64);
        let mut out = Vec::with_capacity(per_project);
        while out.len() < per_project {
            let doc = *rng.pick(&docs);
            let Some(text) = question_from(&mut rng, &doc.text, out.len()) else {
                continue;
            };
            out.push(Question {
                project: doc.project,
                text,
            });
        }
        per.push(out);
    }
    let mut questions = Vec::with_capacity(per_project * per.len());
    let mut per: Vec<std::vec::IntoIter<Question>> = per.into_iter().map(Vec::into_iter).collect();
    for _ in 0..per_project {
        questions.extend(per.iter_mut().filter_map(Iterator::next));
    }
    questions
}

/// Sorted copy's percentile, in milliseconds.
fn ms_at(sorted_us: &[u64], p: f64) -> f64 {
    percentile(sorted_us, p) as f64 / 1000.0
}

/// What the replies of one run said, besides their latency.
#[derive(Default)]
pub(super) struct ReplyStats {
    /// Server-side time per reply, microseconds (`search_time_ms` or `took_ms`).
    server_us: Vec<u64>,
    /// Hits per reply.
    hits: Vec<u64>,
    /// `total_hits` (teleport) or evidence events (search) per reply.
    extra: Vec<u64>,
    /// Answers per tier (search).
    tiers: std::collections::BTreeMap<String, u64>,
}

pub(super) type SharedStats = Arc<std::sync::Mutex<ReplyStats>>;

/// `(subject, body)` of each request of a run.
type Calls = Vec<(String, Bytes)>;

fn lock_stats(stats: &SharedStats) -> std::sync::MutexGuard<'_, ReplyStats> {
    stats
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Checks a `teleport.search` reply and records its server time and hits.
pub(super) fn teleport_check(stats: SharedStats) -> ReplyCheck {
    Arc::new(move |payload: &[u8]| {
        let body: serde_json::Value =
            serde_json::from_slice(payload).map_err(|err| err.to_string())?;
        if let Some(error) = body.get("error") {
            return Err(error.to_string());
        }
        let (Some(results), Some(time_ms)) =
            (body["results"].as_array(), body["search_time_ms"].as_f64())
        else {
            return Err(format!("unexpected reply: {body}"));
        };
        let mut stats = lock_stats(&stats);
        stats.server_us.push((time_ms * 1000.0).round() as u64);
        stats.hits.push(results.len() as u64);
        stats.extra.push(body["total_hits"].as_u64().unwrap_or(0));
        Ok(())
    })
}

/// Checks a `search` reply: answered by `expected_tier`; records its time and hits.
fn search_check(stats: SharedStats, expected_tier: String) -> ReplyCheck {
    Arc::new(move |payload: &[u8]| {
        let body: serde_json::Value =
            serde_json::from_slice(payload).map_err(|err| err.to_string())?;
        if let Some(error) = body.get("error") {
            return Err(error.to_string());
        }
        let tier = body["tier"].as_str().unwrap_or("(none)").to_owned();
        let results = body["results"].as_array().map_or(&[][..], Vec::as_slice);
        let mut stats = lock_stats(&stats);
        *stats.tiers.entry(tier.clone()).or_default() += 1;
        stats
            .server_us
            .push(body["took_ms"].as_u64().unwrap_or(0) * 1000);
        stats.hits.push(results.len() as u64);
        stats.extra.push(
            results
                .iter()
                .map(|result| result["evidence"].as_array().map_or(0, Vec::len) as u64)
                .sum(),
        );
        if tier == expected_tier {
            Ok(())
        } else {
            Err(format!(
                "answered by tier {tier}, fallback_reason {}",
                body["fallback_reason"]
            ))
        }
    })
}

pub(super) async fn teleport(args: &TeleportArgs) -> anyhow::Result<()> {
    let events = generate(&YearSpec {
        seed: args.seed,
        events: args.year_events,
    });
    let questions = year_questions(&events, args.questions);
    drop(events);
    let projects: std::collections::BTreeSet<&str> = questions.iter().map(|q| q.project).collect();
    println!(
        "{} questions ({} per project, {} projects in turn) from the year (seed {}, {} events); top {}",
        questions.len(),
        args.questions,
        projects.len(),
        args.seed,
        args.year_events,
        args.limit,
    );
    for question in questions.iter().take(args.show_questions) {
        println!("  [{}] {}", question.project, question.text);
    }
    let client = async_nats::connect(&args.url).await.context("connect")?;
    let teleport_bodies: Calls = questions
        .iter()
        .map(|q| {
            (
                format!("memory.query.{}.teleport.search", q.project),
                Bytes::from(
                    serde_json::to_vec(&serde_json::json!({"query": q.text, "limit": args.limit}))
                        .unwrap_or_default(),
                ),
            )
        })
        .collect();
    let search_bodies: Calls = questions
        .iter()
        .map(|q| {
            (
                format!("memory.query.{}.search", q.project),
                Bytes::from(
                    serde_json::to_vec(
                        &serde_json::json!({"query": q.text, "limit": args.limit, "now": YEAR_NOW}),
                    )
                    .unwrap_or_default(),
                ),
            )
        })
        .collect();
    let search_label = format!("search ({} tier)", args.expect_tier);
    let mut kinds: Vec<(&str, &Calls, bool)> = vec![("teleport.search", &teleport_bodies, true)];
    if !args.skip_search {
        kinds.push((&search_label, &search_bodies, false));
    }
    let mut failed = 0usize;
    for (label, bodies, is_teleport) in &kinds {
        // Warm-up: every question once, one at a time, unmeasured.
        let reply_bytes = {
            let (subject, body) = &bodies[0];
            client
                .request(subject.clone(), body.clone())
                .await
                .context("warm-up request")?
                .payload
                .len()
        };
        let warm_stats = SharedStats::default();
        let check = if *is_teleport {
            teleport_check(warm_stats.clone())
        } else {
            search_check(warm_stats.clone(), args.expect_tier.clone())
        };
        let warm_up = closed_loop(&client, Arc::new((*bodies).clone()), 1, check).await?;
        if let Some(first) = warm_up.failures.first() {
            println!(
                "{label} warm-up: {} of {} calls failed, first: {first}",
                warm_up.failures.len(),
                bodies.len(),
            );
            failed += warm_up.failures.len();
        }
        for &concurrency in &args.concurrency {
            let calls: Vec<(String, Bytes)> = (0..args.requests)
                .map(|i| bodies[i % bodies.len()].clone())
                .collect();
            let stats = SharedStats::default();
            let check = if *is_teleport {
                teleport_check(stats.clone())
            } else {
                search_check(stats.clone(), args.expect_tier.clone())
            };
            let mut run = closed_loop(&client, Arc::new(calls), concurrency, check).await?;
            let line = latency_line(&format!("{label} c={concurrency}"), &mut run.latencies_us);
            println!(
                "{line}  {:>7.0} req/s  errors {}  (first reply {reply_bytes} bytes)",
                args.requests as f64 / run.elapsed_secs,
                run.failures.len(),
            );
            let mut stats = std::mem::take(&mut *lock_stats(&stats));
            stats.server_us.sort_unstable();
            let mean =
                |values: &[u64]| values.iter().sum::<u64>() as f64 / values.len().max(1) as f64;
            let empty = stats.hits.iter().filter(|&&hits| hits == 0).count();
            if *is_teleport {
                println!(
                    "  server search_time_ms p50 {:.3} ms p99 {:.3} ms max {:.3} ms; hits per call {:.1} ({empty} calls without hits); total_hits mean {:.0}",
                    ms_at(&stats.server_us, 50.0),
                    ms_at(&stats.server_us, 99.0),
                    stats.server_us.last().copied().unwrap_or(0) as f64 / 1000.0,
                    mean(&stats.hits),
                    mean(&stats.extra),
                );
            } else {
                let tiers: Vec<String> = stats
                    .tiers
                    .iter()
                    .map(|(tier, n)| format!("{tier} {n}"))
                    .collect();
                println!(
                    "  server took_ms p50 {:.0} ms p99 {:.0} ms max {:.0} ms; tiers: {}; results per call {:.1} ({empty} calls without results); evidence events per call {:.1}",
                    ms_at(&stats.server_us, 50.0),
                    ms_at(&stats.server_us, 99.0),
                    stats.server_us.last().copied().unwrap_or(0) as f64 / 1000.0,
                    tiers.join(", "),
                    mean(&stats.hits),
                    mean(&stats.extra),
                );
            }
            if let Some(first) = run.failures.first() {
                println!("  error ({} in all), first: {first}", run.failures.len());
            }
            failed += run.failures.len();
        }
    }
    if failed > 0 {
        bail!("{failed} calls failed");
    }
    Ok(())
}
