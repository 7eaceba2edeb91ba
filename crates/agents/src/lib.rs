//! `memory-agents`: what coding agents (Claude Code, Codex) send and leave behind, turned
//! into agent-memory events.
//!
//! - [`project`]: which project a working directory belongs to, from git rather than the
//!   folder's name, so worktrees and subfolders of a monorepo are one project.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod project;

pub use project::{ProjectIdentity, ProjectSource, project_identity};
