//! The JetStream stream and the durable consumer as the configuration describes them.
//! An existing one is compared with the configuration, never silently inherited:
//! - the stream's subjects are set to the configured ones, with a warning naming both,
//!   when the daemon manages the stream (`create_stream`); otherwise a mismatch is an
//!   error; memory storage is always an error (an event NATS acknowledged would be
//!   lost with the server);
//! - the consumer's filter, ack wait and max ack pending are updated to the configured
//!   ones, with a warning naming both; an ack policy other than explicit is an error
//!   (the server cannot change it, and the daemon acknowledges only what it stored).

use std::collections::BTreeSet;
use std::time::Duration;

use async_nats::Client;
use async_nats::jetstream::consumer::{AckPolicy, PullConsumer, pull};
use async_nats::jetstream::context::{ConsumerInfoErrorKind, GetStreamErrorKind};
use async_nats::jetstream::{self, stream};
use memory_config::JetStreamConfig;
use tracing::{info, warn};

use crate::error::NatsError;

fn failed(what: &'static str) -> impl Fn(&dyn std::fmt::Display) -> NatsError {
    move |err| NatsError::JetStream {
        what,
        detail: err.to_string(),
    }
}

fn subject_set(subjects: impl IntoIterator<Item = impl AsRef<str>>) -> BTreeSet<String> {
    subjects
        .into_iter()
        .map(|subject| subject.as_ref().to_owned())
        .filter(|subject| !subject.is_empty())
        .collect()
}

/// Gets the stream, creating it when configured to, and makes its configuration agree
/// with `config` (see the module doc).
///
/// # Errors
/// When the stream does not exist and may not be created, disagrees in a way the daemon
/// may not or cannot fix, or the server refuses.
pub async fn ensure_stream(
    client: &Client,
    config: &JetStreamConfig,
) -> Result<stream::Stream, NatsError> {
    let context = jetstream::new(client.clone());
    let wanted = subject_set(&config.subjects);
    let mut stream = match context.get_stream(&config.stream).await {
        Ok(stream) => stream,
        Err(err)
            if matches!(err.kind(), GetStreamErrorKind::JetStream(inner)
                if inner.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND) =>
        {
            if !config.create_stream {
                return Err(NatsError::JetStream {
                    what: "stream",
                    detail: format!(
                        "stream {} does not exist and [nats.jetstream] create_stream is false",
                        config.stream
                    ),
                });
            }
            let created = context
                .create_stream(stream::Config {
                    name: config.stream.clone(),
                    subjects: config.subjects.clone(),
                    storage: stream::StorageType::File,
                    ..stream::Config::default()
                })
                .await
                .map_err(|err| failed("stream")(&err))?;
            info!(stream = %config.stream, subjects = ?config.subjects, "jetstream stream created");
            return Ok(created);
        }
        Err(err) => return Err(failed("stream")(&err)),
    };
    let existing = stream
        .info()
        .await
        .map_err(|err| failed("stream")(&err))?
        .config
        .clone();
    if existing.storage != stream::StorageType::File {
        return Err(NatsError::JetStream {
            what: "stream",
            detail: format!(
                "stream {} keeps messages in memory: an event NATS acknowledged would be lost \
                 if the server stopped before the daemon stored it; recreate it with file \
                 storage",
                config.stream
            ),
        });
    }
    let found = subject_set(&existing.subjects);
    if found != wanted {
        if !config.create_stream {
            return Err(NatsError::JetStream {
                what: "stream",
                detail: format!(
                    "stream {} captures {found:?}, the configuration says {wanted:?}; the \
                     daemon does not change a stream it does not manage (create_stream is \
                     false): fix one of them",
                    config.stream
                ),
            });
        }
        warn!(
            stream = %config.stream,
            from = ?found,
            to = ?wanted,
            "jetstream stream subjects differ from the configuration: updating the stream"
        );
        context
            .update_stream(stream::Config {
                subjects: config.subjects.clone(),
                ..existing
            })
            .await
            .map_err(|err| failed("stream")(&err))?;
        stream = context
            .get_stream(&config.stream)
            .await
            .map_err(|err| failed("stream")(&err))?;
    }
    Ok(stream)
}

/// The durable pull consumer as configured: created, or an existing one compared and
/// updated (see the module doc).
///
/// # Errors
/// An existing consumer whose ack policy is not explicit; server refusals.
pub async fn ensure_consumer(
    stream: &stream::Stream,
    config: &JetStreamConfig,
) -> Result<PullConsumer, NatsError> {
    let wanted = pull::Config {
        durable_name: Some(config.durable_name.clone()),
        ack_policy: AckPolicy::Explicit,
        ack_wait: Duration::from_secs(config.ack_wait_secs),
        max_ack_pending: config.max_ack_pending,
        filter_subjects: config.subjects.clone(),
        ..pull::Config::default()
    };
    let existing = match stream.consumer_info(&config.durable_name).await {
        Ok(info) => Some(info.config),
        Err(err) if err.kind() == ConsumerInfoErrorKind::NotFound => None,
        Err(err) => return Err(failed("consumer")(&err)),
    };
    let Some(existing) = existing else {
        let consumer = stream
            .create_consumer(wanted)
            .await
            .map_err(|err| failed("consumer")(&err))?;
        info!(consumer = %config.durable_name, "jetstream consumer created");
        return Ok(consumer);
    };
    if existing.ack_policy != AckPolicy::Explicit {
        return Err(NatsError::JetStream {
            what: "consumer",
            detail: format!(
                "durable consumer {} acknowledges with {:?}; the daemon acknowledges each \
                 message only once its event is stored, which needs explicit acks, and the \
                 server cannot change a consumer's ack policy: delete it (`nats consumer rm \
                 {} {}`) and restart",
                config.durable_name,
                existing.ack_policy,
                stream.cached_info().config.name,
                config.durable_name
            ),
        });
    }
    let found_filter = subject_set(
        existing
            .filter_subjects
            .iter()
            .chain(std::iter::once(&existing.filter_subject)),
    );
    let mut differences = Vec::new();
    if found_filter != subject_set(&config.subjects) {
        differences.push(format!(
            "filter {found_filter:?} → {:?}",
            subject_set(&config.subjects)
        ));
    }
    if existing.ack_wait != wanted.ack_wait {
        differences.push(format!(
            "ack wait {:?} → {:?}",
            existing.ack_wait, wanted.ack_wait
        ));
    }
    if existing.max_ack_pending != wanted.max_ack_pending {
        differences.push(format!(
            "max ack pending {} → {}",
            existing.max_ack_pending, wanted.max_ack_pending
        ));
    }
    if differences.is_empty() {
        return stream
            .get_consumer(&config.durable_name)
            .await
            .map_err(|err| failed("consumer")(&err));
    }
    warn!(
        consumer = %config.durable_name,
        changes = %differences.join("; "),
        "jetstream consumer differs from the configuration: updating it"
    );
    stream
        .update_consumer(wanted)
        .await
        .map_err(|err| failed("consumer")(&err))
}
