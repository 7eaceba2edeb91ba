//! [`Spend`]: what the model may cost — requests per minute and tokens per day — shared
//! by every client of one daemon (summaries, the indexing agent, search phrases).
//!
//! Peers' users have been burned by LLM indexing that ran up bills overnight, so the
//! spend is bounded and visible: every answer's `usage` is counted in
//! `memory_llm_tokens_total{direction,purpose}`; once the day's tokens reach the cap
//! every request is refused at once with [`LlmError::BudgetExhausted`] (callers fall
//! back to their offline path), `memory_llm_budget_exhausted_total{purpose}` counts the
//! refusals, and one ERROR line per day says so. The day is the UTC day. With a ledger
//! file the day's count survives restarts, so a crash loop cannot spend the cap twice.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tracing::{error, warn};

use crate::error::LlmError;
use crate::metrics::LLM_METRICS;

/// What a request is for: the `purpose` label of the token metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Purpose {
    /// A TOC summary.
    Summary,
    /// The indexing agent.
    Indexing,
    /// Search phrases for a question.
    Phrases,
    /// The capability probe at start.
    Probe,
}

impl Purpose {
    /// The metrics label.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Summary => "summary",
            Purpose::Indexing => "indexing",
            Purpose::Phrases => "phrases",
            Purpose::Probe => "probe",
        }
    }
}

/// Tokens of one answer, as the server reported them (`usage`), or estimated from the
/// text (four characters a token) when it did not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Tokens read.
    pub prompt_tokens: u64,
    /// Tokens written.
    pub completion_tokens: u64,
}

impl TokenUsage {
    /// Both directions.
    #[must_use]
    pub fn total(self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// The limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpendLimits {
    /// Most requests in any 60 s; 0 for no limit.
    pub requests_per_minute: u32,
    /// Most tokens (prompt + completion) per UTC day; 0 for no limit.
    pub daily_tokens: u64,
}

impl SpendLimits {
    /// `[llm] requests_per_minute` and `daily_token_cap`.
    #[must_use]
    pub fn from_config(config: &memory_config::LlmConfig) -> SpendLimits {
        SpendLimits {
            requests_per_minute: config.requests_per_minute,
            daily_tokens: config.daily_token_cap,
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Ledger {
    /// Days since the Unix epoch (UTC).
    day: u64,
    /// Tokens spent that day.
    tokens: u64,
}

#[derive(Debug, Default)]
struct State {
    ledger: Ledger,
    /// Send times of the requests of the last minute.
    sent: VecDeque<Instant>,
    /// The day the cap was last announced.
    announced_day: Option<u64>,
}

/// The shared spend of one daemon's model clients.
#[derive(Debug)]
pub struct Spend {
    limits: SpendLimits,
    ledger_path: Option<PathBuf>,
    state: Mutex<State>,
}

fn today() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() / 86_400)
}

impl Spend {
    /// A spend with `limits`, counted in memory only.
    #[must_use]
    pub fn new(limits: SpendLimits) -> Spend {
        Spend {
            limits,
            ledger_path: None,
            state: Mutex::new(State {
                ledger: Ledger {
                    day: today(),
                    tokens: 0,
                },
                ..State::default()
            }),
        }
    }

    /// A spend whose day count is kept in `path` (JSON, rewritten after each answer) and
    /// read back from it at start when it is of today.
    #[must_use]
    pub fn with_ledger(limits: SpendLimits, path: PathBuf) -> Spend {
        let spend = Spend::new(limits);
        if let Ok(text) = std::fs::read_to_string(&path) {
            match serde_json::from_str::<Ledger>(&text) {
                Ok(ledger) if ledger.day == today() => spend.lock().ledger = ledger,
                Ok(_) => {}
                Err(err) => {
                    warn!(path = %path.display(), error = %err, "unreadable LLM spend ledger; starting the day at 0")
                }
            }
        }
        Spend {
            ledger_path: Some(path),
            ..spend
        }
    }

    /// The limits.
    #[must_use]
    pub fn limits(&self) -> SpendLimits {
        self.limits
    }

    /// Tokens spent today.
    #[must_use]
    pub fn tokens_today(&self) -> u64 {
        let mut state = self.lock();
        roll(&mut state.ledger);
        state.ledger.tokens
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets one request of `purpose` go: refuses it when the day's tokens are spent, and
    /// waits for a free slot of the minute, but not past `deadline` (then refuses it).
    ///
    /// # Errors
    /// [`LlmError::BudgetExhausted`] or [`LlmError::RateLimited`].
    pub fn admit(&self, purpose: Purpose, deadline: Instant) -> Result<(), LlmError> {
        loop {
            let wait = {
                let mut state = self.lock();
                roll(&mut state.ledger);
                let cap = self.limits.daily_tokens;
                if cap > 0 && state.ledger.tokens >= cap {
                    LLM_METRICS
                        .budget_exhausted
                        .with_label_values(&[purpose.as_str()])
                        .inc();
                    let day = state.ledger.day;
                    if state.announced_day != Some(day) {
                        state.announced_day = Some(day);
                        error!(
                            cap,
                            spent = state.ledger.tokens,
                            "daily LLM token cap reached ([llm] daily_token_cap): no model calls until 00:00 UTC; summaries, ideas and search phrases use their offline paths"
                        );
                    }
                    return Err(LlmError::BudgetExhausted {
                        spent: state.ledger.tokens,
                        cap,
                    });
                }
                let rpm = self.limits.requests_per_minute;
                if rpm == 0 {
                    return Ok(());
                }
                let now = Instant::now();
                while state
                    .sent
                    .front()
                    .is_some_and(|sent| now.duration_since(*sent) >= Duration::from_secs(60))
                {
                    state.sent.pop_front();
                }
                if state.sent.len() < rpm as usize {
                    state.sent.push_back(now);
                    return Ok(());
                }
                let oldest = state.sent.front().copied().unwrap_or(now);
                (oldest + Duration::from_secs(60)).saturating_duration_since(now)
            };
            if Instant::now() + wait > deadline {
                LLM_METRICS
                    .rate_limited
                    .with_label_values(&[purpose.as_str()])
                    .inc();
                return Err(LlmError::RateLimited {
                    requests_per_minute: self.limits.requests_per_minute,
                });
            }
            std::thread::sleep(wait.max(Duration::from_millis(5)));
        }
    }

    /// Counts an answer's tokens.
    pub fn record(&self, purpose: Purpose, usage: TokenUsage) {
        let metrics = &*LLM_METRICS;
        metrics
            .tokens
            .with_label_values(&["prompt", purpose.as_str()])
            .inc_by(usage.prompt_tokens);
        metrics
            .tokens
            .with_label_values(&["completion", purpose.as_str()])
            .inc_by(usage.completion_tokens);
        let text = {
            let mut state = self.lock();
            roll(&mut state.ledger);
            state.ledger.tokens = state.ledger.tokens.saturating_add(usage.total());
            metrics
                .tokens_today
                .set(i64::try_from(state.ledger.tokens).unwrap_or(i64::MAX));
            self.ledger_path
                .as_ref()
                .and_then(|_| serde_json::to_string(&state.ledger).ok())
        };
        if let (Some(path), Some(text)) = (&self.ledger_path, text) {
            let tmp = path.with_extension("tmp");
            if let Err(err) = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path))
            {
                warn!(path = %path.display(), error = %err, "cannot write the LLM spend ledger");
            }
        }
    }
}

/// Starts a new day's count when the UTC day changed.
fn roll(ledger: &mut Ledger) {
    let day = today();
    if ledger.day != day {
        *ledger = Ledger { day, tokens: 0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daily_cap_refuses_once_reached_and_the_ledger_keeps_it_across_restarts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("llm-spend.json");
        let limits = SpendLimits {
            requests_per_minute: 0,
            daily_tokens: 100,
        };
        let far = Instant::now() + Duration::from_secs(5);
        let spend = Spend::with_ledger(limits, path.clone());
        spend.admit(Purpose::Indexing, far).expect("under the cap");
        spend.record(
            Purpose::Indexing,
            TokenUsage {
                prompt_tokens: 80,
                completion_tokens: 30,
            },
        );
        let err = spend
            .admit(Purpose::Indexing, far)
            .expect_err("cap reached");
        assert!(
            matches!(
                err,
                LlmError::BudgetExhausted {
                    spent: 110,
                    cap: 100
                }
            ),
            "{err}"
        );
        // A restart reads today's count back.
        let restarted = Spend::with_ledger(limits, path);
        assert_eq!(restarted.tokens_today(), 110);
        assert!(restarted.admit(Purpose::Summary, far).is_err());
    }

    #[test]
    fn requests_per_minute_refuse_what_cannot_wait() {
        let spend = Spend::new(SpendLimits {
            requests_per_minute: 2,
            daily_tokens: 0,
        });
        let soon = Instant::now() + Duration::from_millis(50);
        spend.admit(Purpose::Phrases, soon).expect("first");
        spend.admit(Purpose::Phrases, soon).expect("second");
        let err = spend
            .admit(Purpose::Phrases, soon)
            .expect_err("third waits a minute");
        assert!(
            matches!(
                err,
                LlmError::RateLimited {
                    requests_per_minute: 2
                }
            ),
            "{err}"
        );
    }
}
