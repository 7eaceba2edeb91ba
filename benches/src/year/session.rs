//! One session's voice: a project's naming style, and turns filled from the templates.

use super::rng::Rng;
use super::topics::{GLUE_ASSISTANT, GLUE_USER, TOPICS, Topic};

/// Where a project's files live and what it calls things.
pub(super) struct ProjectStyle {
    prefix: &'static str,
    ext: &'static str,
    ticket: &'static str,
    services: &'static [&'static str],
    tables: &'static [&'static str],
    test_cmd: &'static str,
}

pub(super) fn style(project: &str) -> ProjectStyle {
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

pub(super) struct Session<'a> {
    pub(super) rng: &'a mut Rng,
    pub(super) project: &'static str,
    pub(super) style: ProjectStyle,
    pub(super) topic: &'static Topic,
    pub(super) branch: String,
    pub(super) last_call: usize,
    pub(super) last_topic: &'static Topic,
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

    pub(super) fn say(&mut self, kind: &'static str) -> String {
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
