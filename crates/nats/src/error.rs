//! Errors of the NATS edge.

/// What can fail at the NATS edge.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NatsError {
    /// Connecting (including reading credentials or TLS files).
    #[error("cannot connect to NATS at {url}: {detail}")]
    Connect {
        /// The configured URL.
        url: String,
        /// What failed.
        detail: String,
    },
    /// Subscribing.
    #[error("cannot subscribe to {subject}: {detail}")]
    Subscribe {
        /// The subject.
        subject: String,
        /// What failed.
        detail: String,
    },
    /// Another daemon in single mode already serves this NATS.
    #[error(
        "another agent-memory daemon already serves this NATS: {other}. Two daemons in \
         single mode on one NATS split every project's events between their stores at \
         random and each answers queries from its half; stop that one, or give this one a \
         NATS server or account of its own"
    )]
    AnotherInstance {
        /// Who it is.
        other: String,
    },
    /// JetStream stream or consumer set-up.
    #[error("JetStream {what}: {detail}")]
    JetStream {
        /// Which step.
        what: &'static str,
        /// What failed.
        detail: String,
    },
}
