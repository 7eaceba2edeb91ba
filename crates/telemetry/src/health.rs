//! `Health`: readiness of the daemon's named components, shared by every part that
//! can become (un)ready and read by `GET /readyz`.
//!
//! Liveness needs no state: the process is alive while it answers `GET /healthz`.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use serde::Serialize;

/// Readiness of one named component, as reported by `GET /readyz`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ComponentHealth {
    /// Component name, e.g. `store`, `nats`, `bm25_index`.
    pub name: String,
    /// Whether the component is ready to serve.
    pub ready: bool,
    /// Free-form explanation for operators, e.g. `connected to nats://127.0.0.1:4222`.
    pub detail: String,
}

#[derive(Clone, Debug)]
struct ComponentState {
    ready: bool,
    detail: String,
}

/// Readiness registry. Cheap to clone: clones share the same state.
///
/// The process is ready when at least one component is registered and every registered
/// component is ready. A component is registered by its first [`Health::set_ready`] call.
#[derive(Clone, Debug, Default)]
pub struct Health {
    components: Arc<RwLock<BTreeMap<String, ComponentState>>>,
}

impl Health {
    /// A registry with no components; not ready until one registers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `component` if needed and records its readiness and an explanation.
    pub fn set_ready(&self, component: &str, ready: bool, detail: impl Into<String>) {
        let detail = detail.into();
        let mut components = self
            .components
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match components.get_mut(component) {
            Some(state) => {
                state.ready = ready;
                state.detail = detail;
            }
            None => {
                components.insert(component.to_owned(), ComponentState { ready, detail });
            }
        }
    }

    /// True when at least one component is registered and all registered ones are ready.
    pub fn is_ready(&self) -> bool {
        let components = self
            .components
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        !components.is_empty() && components.values().all(|state| state.ready)
    }

    /// Every registered component, sorted by name.
    pub fn snapshot(&self) -> Vec<ComponentHealth> {
        let components = self
            .components
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        components
            .iter()
            .map(|(name, state)| ComponentHealth {
                name: name.clone(),
                ready: state.ready,
                detail: state.detail.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_registry_is_not_ready() {
        let health = Health::new();
        assert!(!health.is_ready());
        assert!(health.snapshot().is_empty());
    }

    #[test]
    fn ready_only_when_every_component_is_ready() {
        let health = Health::new();
        health.set_ready("store", true, "opened");
        assert!(health.is_ready());

        let shared_clone = health.clone();
        shared_clone.set_ready("nats", false, "connecting");
        assert!(!health.is_ready());

        shared_clone.set_ready("nats", true, "connected");
        assert!(health.is_ready());
        assert_eq!(
            health.snapshot(),
            vec![
                ComponentHealth {
                    name: "nats".to_owned(),
                    ready: true,
                    detail: "connected".to_owned(),
                },
                ComponentHealth {
                    name: "store".to_owned(),
                    ready: true,
                    detail: "opened".to_owned(),
                },
            ]
        );
    }

    #[test]
    fn snapshot_serializes_as_json_objects() {
        let health = Health::new();
        health.set_ready("store", false, "recovering");
        let json = serde_json::to_string(&health.snapshot()).expect("serialize snapshot");
        assert_eq!(
            json,
            r#"[{"name":"store","ready":false,"detail":"recovering"}]"#
        );
    }
}
