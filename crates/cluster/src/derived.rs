//! Derived events: what a group's lease holder publishes to the log for every replica
//! to apply (`segment_close`, `toc_summary`) — sealed with the cluster's key so that a
//! producer with access to the log's subjects cannot forge one, and published with
//! their project and id as the message id.

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream;
use hmac::{Hmac, Mac};
use memory_types::{DERIVED_SEAL, Event};
use sha2::Sha256;

use crate::metrics::REPLICA_METRICS;

/// Publishes a derived event to its project's subject of the log, with its project and
/// id as the message id (a retry within the duplicate window is one message), and
/// waits (bounded) for the log's acknowledgement; counts it unless it was a duplicate.
///
/// # Errors
/// What went wrong, for the log: not encodable, not published, not acknowledged in time.
pub async fn publish(context: &jetstream::Context, event: &Event) -> Result<(), String> {
    let mut headers = HeaderMap::new();
    headers.insert(
        "Nats-Msg-Id",
        format!("{}/{}", event.project_id, event.event_id).as_str(),
    );
    let body = serde_json::to_vec(&event.to_wire()).map_err(|err| err.to_string())?;
    let sending = async {
        context
            .publish_with_headers(
                format!("memory.events.{}", event.project_id),
                headers,
                body.into(),
            )
            .await?
            .await
            .map_err(|err| Box::new(err) as Box<dyn std::error::Error + Send + Sync>)
    };
    match tokio::time::timeout(Duration::from_secs(5), sending).await {
        Ok(Ok(ack)) => {
            if !ack.duplicate {
                REPLICA_METRICS
                    .derived
                    .with_label_values(&[event.kind.as_str()])
                    .inc();
            }
            Ok(())
        }
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("the log did not acknowledge it in time".to_owned()),
    }
}

/// HMAC-SHA256 under the cluster's key of what a derived event says (its seal left
/// out), hex.
#[must_use]
pub fn seal(event: &Event, key: &[u8]) -> String {
    mac(event, key)
        .map(|mac| crate::to_hex(&mac.finalize().into_bytes()))
        .unwrap_or_default()
}

/// Whether a derived event's seal is the one the cluster's key gives (compared in
/// constant time).
#[must_use]
pub fn sealed(event: &Event, key: &[u8]) -> bool {
    let Some(given) = event.metadata.get(DERIVED_SEAL) else {
        return false;
    };
    let Some(given) = crate::from_hex(given) else {
        return false;
    };
    mac(event, key).is_some_and(|mac| mac.verify_slice(&given).is_ok())
}

/// The MAC of everything a derived event says but its seal.
fn mac(event: &Event, key: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).ok()?;
    mac.update(
        format!(
            "{}\n{}\n{}\n{}\n{}\n",
            event.kind.as_str(),
            event.project_id,
            event.session_id,
            event.event_id,
            event.timestamp_ms
        )
        .as_bytes(),
    );
    for (name, value) in event
        .metadata
        .iter()
        .filter(|(name, _)| *name != DERIVED_SEAL)
    {
        mac.update(format!("{name}={value}\n").as_bytes());
    }
    // A `toc_summary` says its summary in `text`; length-prefixed so that no text and
    // metadata can be traded for each other. (Empty for a `segment_close`, whose seals
    // are unchanged by it.)
    if !event.text.is_empty() {
        mac.update(format!("text {}\n", event.text.len()).as_bytes());
        mac.update(event.text.as_bytes());
    }
    Some(mac)
}

/// Checks that `event` (of project `webapp`) passes validation where derived events are
/// taken, and only there.
#[cfg(test)]
pub(crate) fn assert_valid_only_where_derived_events_are(event: &Event) {
    let wire = serde_json::to_vec(&event.to_wire()).expect("json");
    let taken = memory_types::ValidationLimits {
        derived_events: true,
        ..memory_types::ValidationLimits::default()
    };
    let scope = memory_types::ProjectScope::Subject("webapp");
    assert_eq!(
        &memory_types::parse_single(&wire, scope, &taken, None).expect("valid"),
        event
    );
    let refused = memory_types::parse_single(
        &wire,
        scope,
        &memory_types::ValidationLimits::default(),
        None,
    );
    assert!(refused.is_err(), "{refused:?}");
}
