//! `Supervisor`: owns the actors, restarts a failed one with exponential backoff.
//!
//! Children are registered under names unique to this supervisor (`<prefix>/<child>`),
//! and handles resolve the name on every call, so a restarted child is reached without
//! anyone holding a stale reference.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{
    Actor, ActorCell, ActorProcessingErr, ActorRef, RpcReplyPort, SpawnErr, SupervisionEvent,
};
use tracing::{error, info, warn};

use crate::metrics::ACTOR_METRICS;

/// Exponential backoff: `base · 2^attempt`, capped at `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
}

impl Backoff {
    /// A backoff starting at `base`, never longer than `max`.
    #[must_use]
    pub fn new(base: Duration, max: Duration) -> Self {
        Backoff {
            base,
            max: max.max(base),
        }
    }

    /// The delay before retry number `attempt` (0-based).
    #[must_use]
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .unwrap_or(self.max)
            .min(self.max)
    }
}

/// Spawns a child linked to the supervisor under the given name.
pub type SpawnChild = Arc<
    dyn Fn(String, ActorCell) -> Pin<Box<dyn Future<Output = Result<ActorCell, SpawnErr>> + Send>>
        + Send
        + Sync,
>;

/// A child the supervisor keeps running.
#[derive(Clone)]
pub struct ChildSpec {
    /// Short name, e.g. `ingest`.
    pub name: String,
    /// How to (re)start it.
    pub spawn: SpawnChild,
}

impl ChildSpec {
    /// A child started by `spawn(registered_name, supervisor)`.
    pub fn new<F, Fut>(name: impl Into<String>, spawn: F) -> Self
    where
        F: Fn(String, ActorCell) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ActorCell, SpawnErr>> + Send + 'static,
    {
        ChildSpec {
            name: name.into(),
            spawn: Arc::new(move |name, supervisor| Box::pin(spawn(name, supervisor))),
        }
    }
}

/// The supervisor's configuration.
pub struct Supervisor;

/// Start-up arguments.
pub struct SupervisorArgs {
    /// Prefix of the children's registered names, unique per supervisor.
    pub prefix: String,
    /// Children, started in order (downstream first, sources last).
    pub children: Vec<ChildSpec>,
    /// Restart delays.
    pub backoff: Backoff,
    /// A child that ran this long before failing starts its backoff over.
    pub healthy_after: Duration,
}

struct Child {
    spec: ChildSpec,
    cell: Option<ActorCell>,
    consecutive_failures: u32,
    started: Instant,
    num_restarts: u64,
}

/// Mutable state.
pub struct SupervisorState {
    prefix: String,
    children: BTreeMap<String, Child>,
    /// The children's names in start order (the map is in name order).
    start_order: Vec<String>,
    backoff: Backoff,
    healthy_after: Duration,
}

/// Messages.
pub enum SupervisorMsg {
    /// Restart a failed child (sent after its backoff).
    Restart(String),
    /// Restart counts by child.
    Observe(RpcReplyPort<BTreeMap<String, u64>>),
}

impl Supervisor {
    /// The registered name of a child.
    #[must_use]
    pub fn child_name(prefix: &str, child: &str) -> String {
        format!("{prefix}/{child}")
    }
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SupervisorMsg>,
        args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        let mut children = BTreeMap::new();
        let mut start_order = Vec::with_capacity(args.children.len());
        for spec in args.children {
            let name = Supervisor::child_name(&args.prefix, &spec.name);
            let cell = (spec.spawn)(name, myself.get_cell()).await?;
            info!(child = %spec.name, "actor started");
            start_order.push(spec.name.clone());
            children.insert(
                spec.name.clone(),
                Child {
                    spec,
                    cell: Some(cell),
                    consecutive_failures: 0,
                    started: Instant::now(),
                    num_restarts: 0,
                },
            );
        }
        Ok(SupervisorState {
            prefix: args.prefix,
            children,
            start_order,
            backoff: args.backoff,
            healthy_after: args.healthy_after,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        // Sources hear the stop before their downstream (reverse start order: ingest
        // is started last), and all are waited for together: each consumer gives its
        // running step up to 10 s, and one after the other that added up to a minute
        // on a loaded machine, past any supervisor's stop timeout.
        let stopping: Vec<_> = state
            .start_order
            .iter()
            .rev()
            .filter_map(|name| state.children.get_mut(name)?.cell.take())
            .map(|cell| async move {
                let _ = cell
                    .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(10)))
                    .await;
            })
            .collect();
        futures::future::join_all(stopping).await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Restart(child_name) => {
                let prefix = state.prefix.clone();
                let Some(child) = state.children.get_mut(&child_name) else {
                    return Ok(());
                };
                let name = Supervisor::child_name(&prefix, &child_name);
                match (child.spec.spawn)(name, myself.get_cell()).await {
                    Ok(cell) => {
                        info!(child = %child_name, restarts = child.num_restarts + 1, "actor restarted");
                        child.cell = Some(cell);
                        child.started = Instant::now();
                        child.num_restarts += 1;
                        ACTOR_METRICS
                            .actor_restarts
                            .with_label_values(&[child_name.as_str()])
                            .inc();
                    }
                    Err(err) => {
                        child.consecutive_failures += 1;
                        let delay = state.backoff.delay(child.consecutive_failures);
                        error!(child = %child_name, error = %err, delay_ms = delay.as_millis() as u64, "actor restart failed");
                        myself.send_after(delay, move || SupervisorMsg::Restart(child_name));
                    }
                }
            }
            SupervisorMsg::Observe(reply) => {
                let _ = reply.send(
                    state
                        .children
                        .iter()
                        .map(|(name, child)| (name.clone(), child.num_restarts))
                        .collect(),
                );
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                let Some((name, child)) = state.children.iter_mut().find(|(_, c)| {
                    c.cell
                        .as_ref()
                        .is_some_and(|own| own.get_id() == cell.get_id())
                }) else {
                    return Ok(());
                };
                child.cell = None;
                if child.started.elapsed() >= state.healthy_after {
                    child.consecutive_failures = 0;
                }
                let delay = state.backoff.delay(child.consecutive_failures);
                child.consecutive_failures += 1;
                warn!(child = %name, error = %err, delay_ms = delay.as_millis() as u64, "actor failed; restarting after backoff");
                let name = name.clone();
                myself.send_after(delay, move || SupervisorMsg::Restart(name));
            }
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                if let Some((name, child)) = state.children.iter_mut().find(|(_, c)| {
                    c.cell
                        .as_ref()
                        .is_some_and(|own| own.get_id() == cell.get_id())
                }) {
                    info!(child = %name, reason = ?reason, "actor stopped");
                    child.cell = None;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        assert_eq!(backoff.delay(0), Duration::from_millis(100));
        assert_eq!(backoff.delay(1), Duration::from_millis(200));
        assert_eq!(backoff.delay(3), Duration::from_millis(800));
        assert_eq!(backoff.delay(4), Duration::from_secs(1));
        assert_eq!(backoff.delay(200), Duration::from_secs(1));
        let odd = Backoff::new(Duration::from_secs(5), Duration::from_secs(1));
        assert_eq!(
            odd.delay(0),
            Duration::from_secs(5),
            "max never undercuts base"
        );
    }

    struct Flaky;
    enum FlakyMsg {
        Crash,
        Ping(RpcReplyPort<u32>),
    }
    impl Actor for Flaky {
        type Msg = FlakyMsg;
        type State = u32;
        type Arguments = ();
        async fn pre_start(
            &self,
            _: ActorRef<FlakyMsg>,
            (): (),
        ) -> Result<u32, ActorProcessingErr> {
            Ok(7)
        }
        async fn handle(
            &self,
            _: ActorRef<FlakyMsg>,
            msg: FlakyMsg,
            state: &mut u32,
        ) -> Result<(), ActorProcessingErr> {
            match msg {
                FlakyMsg::Crash => panic!("boom"),
                FlakyMsg::Ping(reply) => {
                    let _ = reply.send(*state);
                }
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_panicking_child_is_restarted_and_reachable_by_name() {
        let prefix = format!("test-{}", std::process::id());
        let spec = ChildSpec::new("flaky", |name, supervisor| async move {
            Actor::spawn_linked(Some(name), Flaky, (), supervisor)
                .await
                .map(|(actor, _)| actor.get_cell())
        });
        let args = SupervisorArgs {
            prefix: prefix.clone(),
            children: vec![spec],
            backoff: Backoff::new(Duration::from_millis(1), Duration::from_millis(5)),
            healthy_after: Duration::from_secs(60),
        };
        let (supervisor, _) = Actor::spawn(None, Supervisor, args)
            .await
            .expect("spawn supervisor");
        let name = Supervisor::child_name(&prefix, "flaky");
        let first: ActorRef<FlakyMsg> = ActorRef::where_is(name.clone()).expect("registered");
        first.cast(FlakyMsg::Crash).expect("cast");
        let mut restarted = None;
        for _ in 0..200 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            if let Some(actor) = ActorRef::<FlakyMsg>::where_is(name.clone())
                && actor.get_id() != first.get_id()
            {
                restarted = Some(actor);
                break;
            }
        }
        let actor = restarted.expect("child restarted under the same name");
        let answer = actor
            .call(FlakyMsg::Ping, Some(Duration::from_secs(1)))
            .await
            .expect("call");
        assert!(matches!(answer, ractor::rpc::CallResult::Success(7)));
        let restarts = supervisor
            .call(SupervisorMsg::Observe, Some(Duration::from_secs(1)))
            .await
            .expect("observe");
        assert!(
            matches!(restarts, ractor::rpc::CallResult::Success(map) if map.get("flaky") == Some(&1))
        );
        supervisor.stop(None);
    }

    /// A child that takes `linger` to stop (as a consumer waits for its running step),
    /// logging when its stop began and ended.
    struct Slow {
        name: &'static str,
        linger: Duration,
        log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    }
    impl Actor for Slow {
        type Msg = ();
        type State = ();
        type Arguments = ();
        async fn pre_start(&self, _: ActorRef<()>, (): ()) -> Result<(), ActorProcessingErr> {
            Ok(())
        }
        async fn post_stop(&self, _: ActorRef<()>, (): &mut ()) -> Result<(), ActorProcessingErr> {
            let note = |what: &str| {
                if let Ok(mut log) = self.log.lock() {
                    log.push(format!("{what} {}", self.name));
                }
            };
            note("stopping");
            tokio::time::sleep(self.linger).await;
            note("stopped");
            Ok(())
        }
    }

    #[tokio::test]
    async fn children_hear_the_stop_in_reverse_start_order_and_stop_together() {
        let prefix = format!("test-stop-{}", std::process::id());
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        // Names out of alphabetical order: the map the supervisor keeps is by name.
        let children = [("zeta", 300), ("alpha", 300), ("source", 0)]
            .into_iter()
            .map(|(name, linger_ms)| {
                let log = log.clone();
                ChildSpec::new(name, move |registered, supervisor| {
                    let slow = Slow {
                        name,
                        linger: Duration::from_millis(linger_ms),
                        log: log.clone(),
                    };
                    async move {
                        Actor::spawn_linked(Some(registered), slow, (), supervisor)
                            .await
                            .map(|(actor, _)| actor.get_cell())
                    }
                })
            })
            .collect();
        let args = SupervisorArgs {
            prefix,
            children,
            backoff: Backoff::new(Duration::from_millis(1), Duration::from_millis(5)),
            healthy_after: Duration::from_secs(60),
        };
        let (supervisor, _) = Actor::spawn(None, Supervisor, args)
            .await
            .expect("spawn supervisor");
        supervisor
            .stop_and_wait(None, Some(Duration::from_secs(30)))
            .await
            .expect("stopped");
        let log = log.lock().expect("log").clone();
        let heard: Vec<&String> = log.iter().filter(|e| e.starts_with("stopping")).collect();
        assert_eq!(
            heard,
            ["stopping source", "stopping alpha", "stopping zeta"],
            "{log:?}"
        );
        // alpha began stopping before zeta had finished: together, not one by one.
        let position = |entry: &str| log.iter().position(|e| e == entry).expect(entry);
        assert!(
            position("stopping zeta") < position("stopped alpha"),
            "{log:?}"
        );
        assert!(
            position("stopping alpha") < position("stopped zeta"),
            "{log:?}"
        );
    }
}
