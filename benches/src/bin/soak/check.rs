//! The checks on a stopped data dir: every acknowledged event in the log exactly once
//! with the text it was sent with (`events export`), and `admin verify`.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::feed::{EventKey, Ledger};

/// What the export says about the acknowledged events.
#[derive(Default)]
pub(super) struct EventCheck {
    /// Events in the exported projects.
    pub(super) stored: u64,
    /// Acknowledged events the log does not hold.
    pub(super) lost: BTreeSet<EventKey>,
    /// Events the log holds more than once (any event, acknowledged or not).
    pub(super) duplicated: BTreeSet<EventKey>,
    /// Acknowledged events stored with another text than they were sent with (and no
    /// redaction that says why).
    pub(super) changed: BTreeSet<EventKey>,
}

fn daemon_command(bin: &Path, data_dir: &Path, env: &[(String, String)]) -> Command {
    let mut command = Command::new(bin);
    command.arg("--data-dir").arg(data_dir).envs(
        env.iter()
            .map(|(key, value)| (key.as_str(), value.as_str())),
    );
    command
}

/// Exports every project the ledger sent to and checks each acknowledged event.
pub(super) fn check_events(
    bin: &Path,
    data_dir: &Path,
    env: &[(String, String)],
    ledger: &Ledger,
) -> anyhow::Result<EventCheck> {
    let mut check = EventCheck::default();
    let mut stored: HashMap<EventKey, (u32, String, bool)> = HashMap::new();
    for project in ledger.projects() {
        let output = daemon_command(bin, data_dir, env)
            .args(["events", "export", "--project", project])
            .output()
            .context("cannot run events export")?;
        if !output.status.success() {
            bail!(
                "events export --project {project} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        for line in String::from_utf8(output.stdout)?.lines() {
            let event: Value = serde_json::from_str(line)?;
            let key = (
                project.clone(),
                event["event_id"].as_str().unwrap_or_default().to_owned(),
            );
            let redacted = event["metadata"].get("redactions").is_some();
            let text = event["text"].as_str().unwrap_or_default().to_owned();
            let entry = stored.entry(key).or_insert((0, text, redacted));
            entry.0 += 1;
            check.stored += 1;
        }
    }
    for (key, (count, _, _)) in &stored {
        if *count > 1 {
            check.duplicated.insert(key.clone());
        }
    }
    for (key, text) in ledger.acked_events() {
        match stored.get(key) {
            None => {
                check.lost.insert(key.clone());
            }
            Some((_, stored_text, redacted)) if !redacted && stored_text != text => {
                check.changed.insert(key.clone());
            }
            Some(_) => {}
        }
    }
    Ok(check)
}

/// What `admin verify --json` said.
pub(super) struct VerifyOutcome {
    pub(super) ok: bool,
    pub(super) diverged: Vec<String>,
    pub(super) behind: Vec<String>,
    pub(super) unhealthy: Vec<String>,
    pub(super) not_compared: Vec<String>,
    pub(super) rebuild_secs: f64,
    /// Entries the daemon parked in dead letters (the soak's events are all valid, so
    /// any is a finding).
    pub(super) dead_letters: u64,
    /// The whole report, kept in the work dir when it failed.
    pub(super) report: String,
}

/// Runs `admin verify --json` with its scratch dir in `scratch`.
pub(super) fn verify(
    bin: &Path,
    data_dir: &Path,
    env: &[(String, String)],
    scratch: &Path,
) -> anyhow::Result<VerifyOutcome> {
    let output = daemon_command(bin, data_dir, env)
        .args([
            "admin",
            "verify",
            "--json",
            "--examples",
            "5",
            "--scratch-dir",
        ])
        .arg(scratch)
        .output()
        .context("cannot run admin verify")?;
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    let value: Value = serde_json::from_str(&report).with_context(|| {
        format!(
            "admin verify ({}) printed no report: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    let names = |field: &str| -> Vec<String> {
        value[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|name| name.as_str().map(str::to_owned))
            .collect()
    };
    let ok = value["ok"].as_bool().unwrap_or(false);
    anyhow::ensure!(
        ok == output.status.success(),
        "admin verify said ok={ok} but exited {}",
        output.status
    );
    Ok(VerifyOutcome {
        ok,
        diverged: names("diverged"),
        behind: names("behind"),
        unhealthy: names("unhealthy"),
        not_compared: names("not_compared"),
        rebuild_secs: value["rebuild_secs"].as_f64().unwrap_or(0.0),
        dead_letters: value["dead_letters"].as_u64().unwrap_or(0),
        report,
    })
}
