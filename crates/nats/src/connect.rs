//! A NATS client from configuration.

use std::time::Duration;

use async_nats::{Client, ConnectOptions, Event};
use memory_config::NatsConfig;
use memory_telemetry::TELEMETRY_METRICS;
use tracing::{info, warn};

use crate::error::NatsError;

/// How long to wait before connection attempt `attempts` (counted from 1, the first):
/// nothing before the first, then 50 ms doubling up to 2 s. async-nats sleeps this
/// before *every* attempt, the first included: the earlier `50 << attempts` slept 100 ms
/// before the first connection of every process (measured: a hook's 50 ms deadline could
/// never be met).
fn reconnect_delay(attempts: usize) -> Duration {
    if attempts <= 1 {
        return Duration::ZERO;
    }
    Duration::from_millis((50u64 << (attempts - 2).min(6)).min(2_000))
}

/// Connects with the configured name, credentials and TLS. One attempt first: a server
/// that refuses the credentials, or whose certificate the configured CA does not
/// vouch for, is an error at once — retrying cannot mend a configuration. A server
/// that cannot be reached yet is retried in the background (the call returns at once),
/// and a lost connection is re-established forever; `on_state` is told `true`/`false`
/// as the connection comes and goes, and `memory_nats_connected` follows it.
///
/// # Errors
/// Unreadable credentials or TLS files, an unusable URL, credentials the server
/// refuses, or a TLS handshake that fails.
pub async fn connect(
    config: &NatsConfig,
    on_state: impl Fn(bool) + Send + Sync + 'static,
) -> Result<Client, NatsError> {
    let fail = |detail: String| NatsError::Connect {
        url: config.url.clone(),
        detail,
    };
    let mut options = ConnectOptions::new()
        .name(&config.client_name)
        .max_reconnects(None)
        .connection_timeout(Duration::from_secs(5))
        .reconnect_delay_callback(reconnect_delay);
    if let Some(token) = &config.token {
        options = options.token(token.clone());
    }
    if let (Some(user), Some(password)) = (&config.user, &config.password) {
        options = options.user_and_password(user.clone(), password.clone());
    }
    if let Some(seed) = &config.nkey_seed {
        options = options.nkey(seed.clone());
    }
    if let Some(path) = &config.credentials_file {
        options = options
            .credentials_file(path)
            .await
            .map_err(|err| fail(format!("credentials file {}: {err}", path.display())))?;
    }
    if config.tls_required {
        options = options.require_tls(true);
    }
    if let Some(prefix) = &config.inbox_prefix {
        options = options.custom_inbox_prefix(prefix.clone());
    }
    if let Some(ca) = &config.tls_ca_file {
        options = options.add_root_certificates(ca.clone());
    }
    if let (Some(cert), Some(key)) = (&config.tls_cert_file, &config.tls_key_file) {
        options = options.add_client_certificate(cert.clone(), key.clone());
    }
    let on_state = std::sync::Arc::new(on_state);
    options = options.event_callback(move |event| {
        let on_state = on_state.clone();
        async move {
            match event {
                Event::Connected => {
                    info!("nats connected");
                    TELEMETRY_METRICS.nats_connected.set(1);
                    on_state(true);
                }
                Event::Disconnected => {
                    warn!("nats connection lost; reconnecting");
                    TELEMETRY_METRICS.nats_connected.set(0);
                    on_state(false);
                }
                Event::Closed => {
                    info!("nats connection closed");
                    TELEMETRY_METRICS.nats_connected.set(0);
                    on_state(false);
                }
                other => warn!(event = %other, "nats event"),
            }
        }
    });
    let urls: Vec<&str> = config
        .url
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .collect();
    let addrs: Vec<async_nats::ServerAddr> = urls
        .iter()
        .map(|u| u.parse::<async_nats::ServerAddr>())
        .collect::<Result<_, _>>()
        .map_err(|err| fail(err.to_string()))?;
    // Bounded: servers that do not answer at all are for the background retries.
    let first = tokio::time::timeout(FIRST_ATTEMPT, options.clone().connect(addrs.clone())).await;
    match first {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(err)) if let Some(why) = refusal(&err) => Err(fail(format!("{why}: {err}"))),
        unreachable => {
            let err = match unreachable {
                Ok(Err(err)) => err.to_string(),
                _ => "no answer within the first attempt".to_owned(),
            };
            warn!(error = %err, "NATS cannot be reached yet; connecting in the background");
            options
                .retry_on_initial_connect()
                .connect(addrs)
                .await
                .map_err(|err| fail(err.to_string()))
        }
    }
}

/// The longest the first connection attempt may take before the daemon goes on and
/// connects in the background.
const FIRST_ATTEMPT: Duration = Duration::from_secs(10);

/// What a failed first connection says about the configuration, when retrying cannot
/// help: the server refused the credentials, or the TLS handshake failed.
fn refusal(err: &async_nats::ConnectError) -> Option<&'static str> {
    use async_nats::ConnectErrorKind;
    // The certificate's own words (rustls: "invalid peer certificate: UnknownIssuer",
    // "… NotValidForName"); a handshake cut short ("tls handshake eof") is not one.
    let text = format!("{err} {:?}", std::error::Error::source(err)).to_lowercase();
    match err.kind() {
        ConnectErrorKind::Authentication | ConnectErrorKind::AuthorizationViolation => Some(
            "the server refused this daemon's credentials ([nats] token, user and password, \
             nkey_seed or credentials_file)",
        ),
        ConnectErrorKind::Tls => Some(
            "the TLS handshake failed (is [nats] tls_ca_file the CA that signed the server's \
             certificate, and does the URL name the host it was issued for?)",
        ),
        ConnectErrorKind::Io if text.contains("certificate") => Some(
            "the TLS handshake failed (is [nats] tls_ca_file the CA that signed the server's \
             certificate, and does the URL name the host it was issued for?)",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_attempt_is_not_delayed_and_later_ones_back_off() {
        assert_eq!(reconnect_delay(1), Duration::ZERO);
        assert_eq!(reconnect_delay(2), Duration::from_millis(50));
        assert_eq!(reconnect_delay(3), Duration::from_millis(100));
        assert_eq!(reconnect_delay(50), Duration::from_millis(2_000));
    }
}
