//! The daemon against a real nats-server secured each way `[nats]` offers, and tenants
//! kept apart by the server: user and password, an nkey, TLS with certificates made
//! here (rcgen) — and for each, credentials or a CA the server does not take is a clear
//! error at start, not a daemon that retries forever. Then two tenants with subject
//! permissions per project (the pattern `deploy/nats-tenants.conf` ships): each can
//! ingest into and query its own project, and neither can ingest into, query, or read
//! the JetStream subjects of the other's — checked against the server, both ways.
//! (Token authentication is tested in e2e.rs.)

use std::time::Duration;

use anyhow::{Context, bail};
use memory_e2e_tests::{NatsServer, free_port, request_json, serve_daemon, spawn_serve};
use serde_json::{Value, json};

/// Starts a daemon with `env` on `url` and expects it to stop at start with an error
/// saying `says`.
fn refused(url: &str, env: &[(&str, &str)], says: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (mut daemon, _) = spawn_serve(url, dir.path(), free_port(), env)?;
    let exit = daemon.wait_exit(Duration::from_secs(30))?;
    let stderr = daemon.stderr();
    if exit.success() || !stderr.contains(says) {
        bail!("expected a refusal saying {says:?}, got {exit:?}: {stderr}");
    }
    Ok(())
}

async fn ingest_and_query(client: &async_nats::Client, project: &str) -> anyhow::Result<()> {
    let events = json!([{"event_id": "e1", "session_id": "s1", "timestamp": 1_790_000_000_000_u64,
        "kind": "user_message", "text": format!("we decided the {project} cache keeps entries for 5 minutes")}]);
    let reply = tokio::time::timeout(
        Duration::from_secs(20),
        client.request(
            format!("memory.ingest.{project}"),
            serde_json::to_vec(&events)?.into(),
        ),
    )
    .await??;
    let reply: Value = serde_json::from_slice(&reply.payload)?;
    anyhow::ensure!(reply["accepted"] == 1, "{reply}");
    let reply = tokio::time::timeout(
        Duration::from_secs(20),
        client.request(
            format!("memory.query.{project}.events.get"),
            serde_json::to_vec(&json!({"session_id": "s1"}))?.into(),
        ),
    )
    .await??;
    let reply: Value = serde_json::from_slice(&reply.payload)?;
    anyhow::ensure!(
        reply.to_string().contains("cache keeps entries"),
        "{project}: {reply}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_and_password() -> anyhow::Result<()> {
    let nats = NatsServer::start_with_config(
        "authorization { users = [ { user: memory, password: \"s3cret-pass\" } ] }\n",
    )?;
    let data = tempfile::tempdir()?;
    let env = [
        ("AGENT_MEMORY_NATS__USER", "memory"),
        ("AGENT_MEMORY_NATS__PASSWORD", "s3cret-pass"),
    ];
    let (mut daemon, _) = serve_daemon(&nats.url(), data.path(), &env)?;
    let client = async_nats::ConnectOptions::with_user_and_password(
        "memory".to_owned(),
        "s3cret-pass".to_owned(),
    )
    .connect(nats.url())
    .await?;
    ingest_and_query(&client, "webapp").await?;
    daemon.terminate()?;
    refused(
        &nats.url(),
        &[
            ("AGENT_MEMORY_NATS__USER", "memory"),
            ("AGENT_MEMORY_NATS__PASSWORD", "wrong"),
        ],
        "the server refused this daemon's credentials",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nkey() -> anyhow::Result<()> {
    let user = nkeys::KeyPair::new_user();
    let nats = NatsServer::start_with_config(&format!(
        "authorization {{ users = [ {{ nkey: {} }} ] }}\n",
        user.public_key()
    ))?;
    let seed = user.seed()?;
    let data = tempfile::tempdir()?;
    let (mut daemon, _) = serve_daemon(
        &nats.url(),
        data.path(),
        &[("AGENT_MEMORY_NATS__NKEY_SEED", seed.as_str())],
    )?;
    let client = async_nats::ConnectOptions::with_nkey(seed.clone())
        .connect(nats.url())
        .await?;
    ingest_and_query(&client, "webapp").await?;
    daemon.terminate()?;
    let stranger = nkeys::KeyPair::new_user().seed()?;
    refused(
        &nats.url(),
        &[("AGENT_MEMORY_NATS__NKEY_SEED", stranger.as_str())],
        "the server refused this daemon's credentials",
    )
}

/// A CA and a certificate it signs for 127.0.0.1 and localhost, as PEM files in `dir`:
/// (ca.pem, server.pem, server-key.pem).
fn certificates(dir: &std::path::Path, name: &str) -> anyhow::Result<[std::path::PathBuf; 3]> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, format!("{name} test CA"));
    let ca_cert = ca.self_signed(&ca_key)?;
    let server_key = KeyPair::generate()?;
    let mut server = CertificateParams::new(vec!["localhost".to_owned()])?;
    server
        .subject_alt_names
        .push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
    let server_cert = server.signed_by(&server_key, &ca_cert, &ca_key)?;
    let paths = [
        dir.join(format!("{name}-ca.pem")),
        dir.join(format!("{name}-server.pem")),
        dir.join(format!("{name}-server-key.pem")),
    ];
    std::fs::write(&paths[0], ca_cert.pem())?;
    std::fs::write(&paths[1], server_cert.pem())?;
    std::fs::write(&paths[2], server_key.serialize_pem())?;
    Ok(paths)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_servers_ca_and_a_wrong_one() -> anyhow::Result<()> {
    let files = tempfile::tempdir()?;
    let [ca, cert, key] = certificates(files.path(), "server")?;
    let [other_ca, _, _] = certificates(files.path(), "other")?;
    let nats = NatsServer::start_with_config(&format!(
        "tls {{ cert_file: {:?}, key_file: {:?} }}\n",
        cert.display().to_string(),
        key.display().to_string()
    ))?;
    let url = nats.url();
    let ca_text = ca.display().to_string();
    let data = tempfile::tempdir()?;
    let (mut daemon, _) = serve_daemon(
        &url,
        data.path(),
        &[
            ("AGENT_MEMORY_NATS__TLS_REQUIRED", "true"),
            ("AGENT_MEMORY_NATS__TLS_CA_FILE", ca_text.as_str()),
        ],
    )?;
    let client = async_nats::ConnectOptions::new()
        .require_tls(true)
        .add_root_certificates(ca.clone())
        .connect(url.as_str())
        .await
        .context("a client trusting the server's CA")?;
    ingest_and_query(&client, "webapp").await?;
    daemon.terminate()?;
    let other_text = other_ca.display().to_string();
    refused(
        &url,
        &[
            ("AGENT_MEMORY_NATS__TLS_REQUIRED", "true"),
            ("AGENT_MEMORY_NATS__TLS_CA_FILE", other_text.as_str()),
        ],
        "the TLS handshake failed",
    )
}

/// A NATS JWT (v2) of `claims` (`nats` section and name), for `subject`, signed by
/// `issuer`.
fn jwt(issuer: &nkeys::KeyPair, subject: &str, name: &str, nats: Value) -> anyhow::Result<String> {
    use base64::Engine;
    use sha2::Digest;
    let encode = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let mut claims = json!({
        "jti": "", "iat": 1_790_000_000_u64, "iss": issuer.public_key(), "name": name,
        "sub": subject, "nats": nats,
    });
    // The id: base32 of the claims' hash, as the nsc tool makes it.
    let digest = sha2::Sha256::digest(claims.to_string().as_bytes());
    claims["jti"] = json!(data_encoding::BASE32_NOPAD.encode(&digest));
    let header = encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let body = encode(claims.to_string().as_bytes());
    let signed = format!("{header}.{body}");
    let signature = issuer.sign(signed.as_bytes())?;
    Ok(format!("{signed}.{}", encode(&signature)))
}

/// A `.creds` file for a user of `account`.
fn credentials(account: &nkeys::KeyPair, path: &std::path::Path) -> anyhow::Result<()> {
    let user = nkeys::KeyPair::new_user();
    let token = jwt(
        account,
        &user.public_key(),
        "memory",
        json!({"pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1,
               "type": "user", "version": 2}),
    )?;
    std::fs::write(
        path,
        format!(
            "-----BEGIN NATS USER JWT-----\n{token}\n------END NATS USER JWT------\n\n\
             -----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n",
            user.seed()?
        ),
    )?;
    Ok(())
}

/// Decentralised JWT authentication: an operator, an account (JetStream enabled) and
/// its users made here, the server resolving the account from memory; the daemon
/// connects with a credentials file. A user signed by an account the operator never
/// issued is refused at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_file() -> anyhow::Result<()> {
    let operator = nkeys::KeyPair::new_operator();
    let account = nkeys::KeyPair::new_account();
    let system = nkeys::KeyPair::new_account();
    let operator_jwt = jwt(
        &operator,
        &operator.public_key(),
        "test-operator",
        json!({"type": "operator", "version": 2, "system_account": system.public_key()}),
    )?;
    let limits = json!({"subs": -1, "data": -1, "payload": -1, "imports": -1,
        "exports": -1, "wildcards": true, "conn": -1, "leaf": -1,
        "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1});
    let account_jwt = jwt(
        &operator,
        &account.public_key(),
        "memory",
        json!({"type": "account", "version": 2, "limits": limits}),
    )?;
    let system_jwt = jwt(
        &operator,
        &system.public_key(),
        "SYS",
        json!({"type": "account", "version": 2}),
    )?;
    let nats = NatsServer::start_with_config(&format!(
        "operator: {operator_jwt}\nsystem_account: {}\nresolver: MEMORY\n\
         resolver_preload: {{\n  {}: {account_jwt}\n  {}: {system_jwt}\n}}\n",
        system.public_key(),
        account.public_key(),
        system.public_key(),
    ))?;
    let files = tempfile::tempdir()?;
    let creds = files.path().join("memory.creds");
    credentials(&account, &creds)?;
    let creds_text = creds.display().to_string();
    let data = tempfile::tempdir()?;
    let (mut daemon, _) = serve_daemon(
        &nats.url(),
        data.path(),
        &[("AGENT_MEMORY_NATS__CREDENTIALS_FILE", creds_text.as_str())],
    )?;
    let agent = files.path().join("agent.creds");
    credentials(&account, &agent)?;
    let client = async_nats::ConnectOptions::with_credentials_file(agent)
        .await?
        .connect(nats.url())
        .await?;
    ingest_and_query(&client, "webapp").await?;
    daemon.terminate()?;
    let forged = files.path().join("forged.creds");
    credentials(&nkeys::KeyPair::new_account(), &forged)?;
    let forged_text = forged.display().to_string();
    refused(
        &nats.url(),
        &[("AGENT_MEMORY_NATS__CREDENTIALS_FILE", forged_text.as_str())],
        "the server refused this daemon's credentials",
    )
}

/// The server's configuration for two tenants and the daemon, as
/// `deploy/nats-server.conf` ships the pattern: each tenant publishes to its own
/// project's subjects only and reads only its own inboxes.
const TENANTS: &str = r#"
accounts {
  MEMORY {
    jetstream: enabled
    users: [
      { user: memory-daemon, password: daemon-pass,
        permissions: {
          publish: { allow: ["memory.>", "$JS.API.>", "$JS.ACK.>", "_INBOX.>"] }
          subscribe: { allow: ["memory.>", "_INBOX.>", "$JS.>"] }
          allow_responses: true } }
      { user: alice, password: alice-pass,
        permissions: {
          publish: { allow: ["memory.ingest.proj-a", "memory.events.proj-a", "memory.query.proj-a.>"] }
          subscribe: { allow: ["_INBOX_alice.>"] } } }
      { user: bob, password: bob-pass,
        permissions: {
          publish: { allow: ["memory.ingest.proj-b", "memory.events.proj-b", "memory.query.proj-b.>"] }
          subscribe: { allow: ["_INBOX_bob.>"] } } }
    ]
  }
}
"#;

async fn tenant(url: &str, name: &str) -> anyhow::Result<async_nats::Client> {
    Ok(
        async_nats::ConnectOptions::with_user_and_password(name.to_owned(), format!("{name}-pass"))
            .custom_inbox_prefix(format!("_INBOX_{name}"))
            .connect(url)
            .await?,
    )
}

/// What `client` gets asking `subject` (an error when the server lets nothing through:
/// a reply comes in milliseconds on loopback, so a second of silence is a refusal).
async fn ask(client: &async_nats::Client, subject: String, body: &Value) -> anyhow::Result<Value> {
    let reply = tokio::time::timeout(
        Duration::from_secs(1),
        client.request(subject, serde_json::to_vec(body)?.into()),
    )
    .await??;
    Ok(serde_json::from_slice(&reply.payload)?)
}

/// Whether a subscription of `spy` on `subject` sees anything while `send` runs.
async fn overhears(
    spy: &async_nats::Client,
    subject: &str,
    send: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<bool> {
    use futures::StreamExt;
    let mut subscription = spy.subscribe(subject.to_owned()).await?;
    spy.flush().await?;
    send.await?;
    // `send` waited for its replies: what the subscription could see has been sent.
    Ok(
        tokio::time::timeout(Duration::from_millis(300), subscription.next())
            .await
            .is_ok(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_cannot_reach_each_others_projects() -> anyhow::Result<()> {
    let nats = NatsServer::start_with_config(TENANTS)?;
    let url = nats.url();
    let data = tempfile::tempdir()?;
    let (mut daemon, _) = serve_daemon(
        &url,
        data.path(),
        &[
            ("AGENT_MEMORY_NATS__USER", "memory-daemon"),
            ("AGENT_MEMORY_NATS__PASSWORD", "daemon-pass"),
        ],
    )?;
    let (alice, bob) = (tenant(&url, "alice").await?, tenant(&url, "bob").await?);
    ingest_and_query(&alice, "proj-a").await?;
    ingest_and_query(&bob, "proj-b").await?;
    let event = |id: &str| {
        json!([{"event_id": id, "session_id": "intruder", "timestamp": 1_790_000_000_000_u64,
                "kind": "user_message", "text": "planted by the other tenant"}])
    };
    for (me, mine, theirs, other) in [
        (&alice, "proj-a", "proj-b", &bob),
        (&bob, "proj-b", "proj-a", &alice),
    ] {
        // Neither ingest nor a query of the other's project reaches the daemon.
        let planted = ask(me, format!("memory.ingest.{theirs}"), &event("x1")).await;
        assert!(
            planted.is_err(),
            "{mine} ingested into {theirs}: {planted:?}"
        );
        let read = ask(
            me,
            format!("memory.query.{theirs}.events.get"),
            &json!({"session_id": "s1"}),
        )
        .await;
        assert!(read.is_err(), "{mine} queried {theirs}: {read:?}");
        // Nor a JetStream publish to its subject, nor the JetStream API.
        me.publish(
            format!("memory.events.{theirs}"),
            serde_json::to_vec(&event("x2")[0])?.into(),
        )
        .await?;
        me.flush().await?;
        let api = ask(
            me,
            "$JS.API.STREAM.INFO.MEMORY_EVENTS".to_owned(),
            &json!({}),
        )
        .await;
        assert!(api.is_err(), "{mine} read the stream's info: {api:?}");
        // Its subscriptions to the other's subjects and inboxes stay silent while the
        // other works.
        let counter = std::sync::atomic::AtomicU32::new(0);
        let works = || async {
            // A new turn and a query of the other tenant, each with its reply.
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let turn = json!([{"event_id": format!("w{n}"), "session_id": "s1",
                "timestamp": 1_790_000_001_000_u64 + u64::from(n), "kind": "user_message",
                "text": "more work"}]);
            let stored = request_json(other, &format!("memory.ingest.{theirs}"), &turn).await?;
            anyhow::ensure!(stored["accepted"] == 1, "{stored}");
            request_json(
                other,
                &format!("memory.query.{theirs}.events.get"),
                &json!({"session_id": "s1"}),
            )
            .await?;
            anyhow::Ok(())
        };
        for subject in [
            format!("memory.events.{theirs}"),
            format!("memory.query.{theirs}.>"),
            "_INBOX.>".to_owned(),
            format!(
                "_INBOX_{}.>",
                if mine == "proj-a" { "bob" } else { "alice" }
            ),
            "$JS.>".to_owned(),
        ] {
            assert!(
                !overhears(me, &subject, works()).await?,
                "{mine} overheard {subject}"
            );
        }
    }
    // Nothing either planted is stored: each project holds its own tenant's events.
    let daemon_client = async_nats::ConnectOptions::with_user_and_password(
        "memory-daemon".to_owned(),
        "daemon-pass".to_owned(),
    )
    .connect(url.as_str())
    .await?;
    for project in ["proj-a", "proj-b"] {
        let intruder = request_json(
            &daemon_client,
            &format!("memory.query.{project}.events.get"),
            &json!({"session_id": "intruder"}),
        )
        .await?;
        assert!(
            !intruder.to_string().contains("planted"),
            "{project}: {intruder}"
        );
    }
    daemon.terminate()?;
    Ok(())
}
