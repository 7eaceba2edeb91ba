//! [`Projects`]: the project of each working directory an agent's lines name, looked up
//! once per directory (a transcript names its `cwd` on every line).

use std::collections::HashMap;
use std::path::Path;

use crate::project::project_identity;

/// Working directory → project id, with the configured override.
#[derive(Debug, Default)]
pub struct Projects {
    override_id: Option<String>,
    by_cwd: HashMap<String, String>,
    last: Option<String>,
}

impl Projects {
    /// Projects named by git (see [`crate::project`]), or all `override_id` when set.
    #[must_use]
    pub fn new(override_id: Option<String>) -> Projects {
        Projects {
            override_id: override_id.filter(|id| !id.trim().is_empty()),
            by_cwd: HashMap::new(),
            last: None,
        }
    }

    /// The project of `cwd`.
    pub fn of(&mut self, cwd: &str) -> String {
        let id = match self.by_cwd.get(cwd) {
            Some(id) => id.clone(),
            None => {
                let id = project_identity(Path::new(cwd), self.override_id.as_deref()).id;
                self.by_cwd.insert(cwd.to_owned(), id.clone());
                id
            }
        };
        self.last = Some(id.clone());
        id
    }

    /// The project of the last directory looked up (for lines that name none), else the
    /// override.
    #[must_use]
    pub fn last(&self) -> Option<String> {
        self.last.clone().or_else(|| self.override_id.clone())
    }
}
