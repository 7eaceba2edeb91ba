//! `memory-agents`: what coding agents (Claude Code, Codex) send and leave behind, turned
//! into agent-memory events.
//!
//! - [`project`]: which project a working directory belongs to, from git rather than the
//!   folder's name, so worktrees and subfolders of a monorepo are one project.
//! - [`claude_code`], [`codex`]: transcripts and rollouts as events (the importers).
//! - [`hook`]: one hook input as events (the hooks, and the daemon's `http` hook).
//! - [`draft`]: the ids both paths share, so a turn seen by a hook and by an import is
//!   stored once; text caps; what was skipped and why.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod claude_code;
pub mod codex;
pub mod draft;
pub mod hook;
pub mod project;
pub mod projects;
pub mod spool;

pub use draft::{Occurrences, Skipped};
pub use hook::{Agent, HookError, HookEvents, HookState, hook_events};
pub use project::{ProjectIdentity, ProjectSource, project_identity};
pub use projects::Projects;
pub use spool::{SpoolDir, SpooledEvent};
