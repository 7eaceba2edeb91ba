//! Responders this process runs on the same NATS server as the daemon, so a measurement
//! of the daemon can be read against what the machine itself allows in the same run.
//!
//! - [`spawn_echo`]: answers every request at once — the transport's floor (two hops
//!   through nats-server, this process's own scheduling).
//! - [`spawn_fsync_echo`]: appends every request's payload to a file and answers only
//!   after the bytes are on disk (`sync_all`, the daemon's durability), with requests
//!   that arrive during a write grouped into the next one, on a thread of its own — the
//!   least any acknowledgement that survives power loss can cost on this machine's disk
//!   and CPU, with none of the daemon's validation, indexes or store.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use async_nats::{Client, Subject, Subscriber};
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A connection of its own subscribed to `subject`, known to the server on return.
async fn subscribe(url: &str, subject: &str) -> anyhow::Result<(Client, Subscriber)> {
    let responder = async_nats::connect(url)
        .await
        .context("connect responder")?;
    let subscription = responder.subscribe(subject.to_owned()).await?;
    // The server has the subscription once the flush returns: no early request is lost.
    responder.flush().await.context("flush responder")?;
    Ok((responder, subscription))
}

/// Answers every request on `subject` with `reply` until the task is aborted.
pub(super) async fn spawn_echo(
    url: &str,
    subject: &str,
    reply: Bytes,
) -> anyhow::Result<JoinHandle<()>> {
    let (responder, mut subscription) = subscribe(url, subject).await?;
    Ok(tokio::spawn(async move {
        while let Some(message) = subscription.next().await {
            if let Some(subject) = message.reply {
                let _ = responder.publish(subject, reply.clone()).await;
            }
        }
    }))
}

/// Answers every request on `subject` with `reply` once its payload is durable in a
/// file under `dir` (group commits on the thread `loadgen-fsync`). Abort the returned
/// task to end it: the thread answers what is queued, then removes the file.
pub(super) async fn spawn_fsync_echo(
    url: &str,
    subject: &str,
    reply: Bytes,
    dir: &Path,
) -> anyhow::Result<JoinHandle<()>> {
    let (responder, mut subscription) = subscribe(url, subject).await?;
    let path = dir.join(format!("loadgen-fsync-{}.log", std::process::id()));
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let (queue, pending) = mpsc::unbounded_channel::<(Bytes, Subject)>();
    let runtime = tokio::runtime::Handle::current();
    let committer = responder.clone();
    std::thread::Builder::new()
        .name("loadgen-fsync".into())
        .spawn(move || {
            commit_loop(file, pending, &committer, &reply, &runtime);
            // The task was aborted or the subscription ended: the file is scratch.
            let _ = std::fs::remove_file(&path);
        })
        .context("cannot start the fsync thread")?;
    Ok(tokio::spawn(async move {
        while let Some(message) = subscription.next().await {
            if let Some(subject) = message.reply
                && queue.send((message.payload, subject)).is_err()
            {
                break;
            }
        }
    }))
}

/// One group commit after another: everything queued is written, synced, then answered.
fn commit_loop(
    mut file: File,
    mut pending: mpsc::UnboundedReceiver<(Bytes, Subject)>,
    client: &Client,
    reply: &Bytes,
    runtime: &tokio::runtime::Handle,
) {
    let mut group = Vec::new();
    let mut bytes = Vec::new();
    let mut failed = 0usize;
    while let Some(first) = pending.blocking_recv() {
        group.push(first);
        while let Ok(next) = pending.try_recv() {
            group.push(next);
        }
        bytes.clear();
        for (payload, _) in &group {
            bytes.extend_from_slice(payload);
            bytes.push(b'\n');
        }
        if let Err(err) = file.write_all(&bytes).and_then(|()| file.sync_all()) {
            // No acknowledgement without the bytes on disk: the requests time out, and
            // the run's failures say why.
            failed += group.len();
            eprintln!(
                "fsync floor: a group of {} not stored ({failed} so far): {err}",
                group.len()
            );
            group.clear();
            continue;
        }
        for (_, subject) in group.drain(..) {
            let _ = runtime.block_on(client.publish(subject, reply.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use memory_e2e_tests::NatsServer;

    use super::*;

    /// A request is answered only once its payload is in the file: read right after the
    /// reply, the file holds it, and holds every payload once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fsync_echo_answers_after_the_payload_is_written() -> anyhow::Result<()> {
        let server = NatsServer::start()?;
        let dir = tempfile::tempdir()?;
        let reply = Bytes::from_static(b"stored");
        let echo = spawn_fsync_echo(&server.url(), "floor.test", reply.clone(), dir.path()).await?;
        let client = server.connect().await?;
        let log = dir
            .path()
            .join(format!("loadgen-fsync-{}.log", std::process::id()));
        let requests = (0..20).map(|n| {
            let (client, log, reply) = (client.clone(), log.clone(), reply.clone());
            async move {
                let payload = format!("{{\"n\":{n}}}");
                let answer = client.request("floor.test", payload.clone().into()).await?;
                let written = std::fs::read_to_string(&log)?;
                anyhow::ensure!(answer.payload == reply, "answer {:?}", answer.payload);
                anyhow::ensure!(
                    written.lines().any(|line| line == payload),
                    "{payload} answered before it was written"
                );
                Ok(())
            }
        });
        for outcome in futures::future::join_all(requests).await {
            outcome?;
        }
        let written = std::fs::read_to_string(&log)?;
        assert_eq!(written.lines().count(), 20, "{written}");
        echo.abort();
        Ok(())
    }

    #[tokio::test]
    async fn echo_answers_with_its_reply() -> anyhow::Result<()> {
        let server = NatsServer::start()?;
        let echo = spawn_echo(&server.url(), "floor.echo", Bytes::from_static(b"ok")).await?;
        let client = server.connect().await?;
        let answer = client
            .request("floor.echo", Bytes::from_static(b"x"))
            .await?;
        assert_eq!(answer.payload, Bytes::from_static(b"ok"));
        echo.abort();
        Ok(())
    }
}
