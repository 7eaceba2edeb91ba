//! Project identity from git.
//!
//! The rule, in order:
//! 1. the caller's override (for the hooks and importers: a project id from config or
//!    the environment), when it is a valid project id;
//! 2. the repository's `origin` remote: `<owner>-<repo>` of its URL (`git@github.com:
//!    acme/webapp.git`, `https://github.com/acme/webapp` → `acme-webapp`; Azure DevOps'
//!    `…/<project>/_git/<repo>` → `<project>-<repo>`), so clones,
//!    worktrees and subfolders are one project wherever they are checked out;
//! 3. the repository without a remote: the name of the folder holding its common git dir
//!    (`/src/webapp/.git` → `webapp`), which worktrees share (a worktree's `.git` file
//!    points into the main repository's `.git/worktrees/<name>`, whose `commondir` leads
//!    back);
//! 4. no repository: the working directory's own name.
//!
//! Every result is made a valid project id (ASCII letters, digits, `-`, `_`, at most 64
//! bytes; longer ones keep 55 bytes and a hash of the whole).

use std::path::{Path, PathBuf};

use memory_types::{MAX_PROJECT_ID_LEN, is_valid_project_id};
use sha2::{Digest, Sha256};

/// Where a project id came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProjectSource {
    /// The configured override.
    Override,
    /// The `origin` remote's URL.
    Origin,
    /// The repository's common git dir (no remote).
    Repository,
    /// The working directory's name (not in a repository).
    Directory,
}

/// A working directory's project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectIdentity {
    /// The project id events are stored under.
    pub id: String,
    /// Which rule gave it.
    pub source: ProjectSource,
    /// The repository's common git dir, when in one.
    pub git_common_dir: Option<PathBuf>,
}

/// The project of `cwd` (see the module docs); `override_id` is the configured override.
#[must_use]
pub fn project_identity(cwd: &Path, override_id: Option<&str>) -> ProjectIdentity {
    // A relative path (a Windows path read on Unix, say) would be searched from this
    // process's own directory: only an absolute one names a repository.
    let common = if cwd.is_absolute() {
        git_common_dir(cwd)
    } else {
        None
    };
    if let Some(id) = override_id
        .map(str::trim)
        .filter(|id| is_valid_project_id(id))
    {
        return ProjectIdentity {
            id: id.to_owned(),
            source: ProjectSource::Override,
            git_common_dir: common,
        };
    }
    if let Some(common) = common {
        if let Some(id) = origin_url(&common).and_then(|url| id_from_url(&url)) {
            return ProjectIdentity {
                id,
                source: ProjectSource::Origin,
                git_common_dir: Some(common),
            };
        }
        let folder = if common.file_name().is_some_and(|name| name == ".git") {
            common.parent().unwrap_or(&common)
        } else {
            // A bare repository: `webapp.git`.
            &common
        };
        let name = folder
            .file_name()
            .map(|name| name.to_string_lossy().trim_end_matches(".git").to_owned())
            .unwrap_or_default();
        return ProjectIdentity {
            id: sanitize(&name),
            source: ProjectSource::Repository,
            git_common_dir: Some(common),
        };
    }
    // The last segment by either separator: a transcript written on Windows names
    // `C:\\Users\\dev\\webapp`, read here as one file name.
    let cwd_text = cwd.to_string_lossy();
    let name = cwd_text
        .rsplit(['/', '\\'])
        .find(|segment| !segment.is_empty())
        .unwrap_or_default()
        .to_owned();
    ProjectIdentity {
        id: sanitize(&name),
        source: ProjectSource::Directory,
        git_common_dir: None,
    }
}

/// The common git dir of the repository holding `start`, if any: the `.git` directory
/// of the main checkout for a worktree too.
fn git_common_dir(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let dot_git = dir.join(".git");
        if dot_git.is_dir() {
            return Some(dot_git);
        }
        if dot_git.is_file() {
            // A worktree or submodule: `gitdir: <path>`.
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let gitdir = text
                .lines()
                .find_map(|line| line.strip_prefix("gitdir:"))?
                .trim();
            let gitdir = dir.join(gitdir);
            return Some(match std::fs::read_to_string(gitdir.join("commondir")) {
                Ok(common) => normalize(&gitdir.join(common.trim())),
                Err(_) => gitdir,
            });
        }
        // A bare repository (`HEAD` and `objects` in the directory itself).
        if dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir() {
            return Some(dir.to_path_buf());
        }
    }
    None
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The `origin` remote's URL from the repository's `config`.
fn origin_url(common: &Path) -> Option<String> {
    let config = std::fs::read_to_string(common.join("config")).ok()?;
    let mut in_origin = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_origin = line
                .replace(' ', "")
                .eq_ignore_ascii_case("[remote\"origin\"]");
            continue;
        }
        if in_origin
            && let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("url")
        {
            return Some(config_value(value));
        }
    }
    None
}

/// A git config value: quotes removed, a trailing `;` or `#` comment outside them
/// dropped.
fn config_value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for ch in raw.trim().chars() {
        match ch {
            '"' => quoted = !quoted,
            ';' | '#' if !quoted => break,
            other => out.push(other),
        }
    }
    out.trim().to_owned()
}

/// `<owner>-<repo>` of a remote URL (scp-like, https, ssh, file paths; Azure DevOps'
/// `<project>/_git/<repo>`).
fn id_from_url(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/');
    let path = match url.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map_or("", |(_, path)| path),
        // scp-like `git@host:owner/repo.git` (but not a Windows `C:\` path).
        None => match url.split_once(':') {
            Some((host, path)) if host.len() > 1 && !path.starts_with('\\') => path,
            _ => url,
        },
    };
    let segments: Vec<&str> = path
        .split(['/', '\\'])
        .filter(|segment| !segment.is_empty() && *segment != "_git")
        .collect();
    let repo = segments.last()?.trim_end_matches(".git");
    if repo.is_empty() {
        return None;
    }
    let id = match segments.len() {
        1 => repo.to_owned(),
        n => format!("{}-{repo}", segments[n - 2]),
    };
    Some(sanitize(&id))
}

/// A valid project id made from `name`: other characters become `-`, runs of `-` one,
/// ends trimmed; empty becomes `default`; over 64 bytes keeps 55 and a hash.
fn sanitize(name: &str) -> String {
    let mut id = String::with_capacity(name.len());
    for ch in name.chars() {
        let ch = if ch.is_ascii_alphanumeric() || ch == '_' {
            ch
        } else {
            '-'
        };
        if ch == '-' && id.ends_with('-') {
            continue;
        }
        id.push(ch);
    }
    let id = id.trim_matches('-').to_ascii_lowercase();
    if id.is_empty() {
        return memory_types::DEFAULT_PROJECT.to_owned();
    }
    if id.len() <= MAX_PROJECT_ID_LEN {
        return id;
    }
    let hash: String = Sha256::digest(id.as_bytes())
        .iter()
        .take(4)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!(
        "{}-{hash}",
        id[..MAX_PROJECT_ID_LEN - 9].trim_end_matches('-')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(root: &Path, origin: Option<&str>) {
        std::fs::create_dir_all(root.join(".git/objects")).expect("mkdir");
        std::fs::create_dir_all(root.join(".git/refs")).expect("mkdir");
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
        let mut config = "[core]\n\tbare = false\n".to_owned();
        if let Some(url) = origin {
            config.push_str(&format!("[remote \"origin\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"));
        }
        std::fs::write(root.join(".git/config"), config).expect("config");
    }

    #[test]
    fn remote_urls_give_owner_and_repo() {
        for url in [
            "git@github.com:Acme/webapp.git",
            "https://github.com/acme/webapp",
            "https://github.com/acme/webapp.git/",
            "ssh://git@gitlab.example.com:2222/acme/webapp.git",
        ] {
            assert_eq!(id_from_url(url).as_deref(), Some("acme-webapp"), "{url}");
        }
        assert_eq!(
            id_from_url("https://gitlab.example.com/group/sub/tool.git").as_deref(),
            Some("sub-tool")
        );
        assert_eq!(
            id_from_url("/srv/git/tool.git").as_deref(),
            Some("git-tool")
        );
        // Azure DevOps, over https and ssh: the project and the repository.
        for url in [
            "https://dev.azure.com/contoso/webapp-team/_git/webapp",
            "git@ssh.dev.azure.com:v3/contoso/webapp-team/webapp",
        ] {
            assert_eq!(
                id_from_url(url).as_deref(),
                Some("webapp-team-webapp"),
                "{url}"
            );
        }
    }

    #[test]
    fn config_values_lose_quotes_and_comments() {
        assert_eq!(
            config_value(r#" "git@github.com:acme/webapp.git" "#),
            "git@github.com:acme/webapp.git"
        );
        assert_eq!(
            config_value("https://github.com/acme/webapp ; moved in 2025"),
            "https://github.com/acme/webapp"
        );
        assert_eq!(
            config_value("https://github.com/acme/webapp # old"),
            "https://github.com/acme/webapp"
        );
        assert_eq!(
            config_value(r#""https://host/a#b/repo""#),
            "https://host/a#b/repo"
        );
    }

    #[test]
    fn subfolders_and_worktrees_are_one_project() {
        let dir = tempfile::tempdir().expect("dir");
        let main = dir.path().join("code/webapp");
        repo(&main, Some("git@github.com:acme/webapp.git"));
        let sub = main.join("services/api");
        std::fs::create_dir_all(&sub).expect("sub");
        // A worktree elsewhere: `.git` file → .git/worktrees/feature, commondir → ../..
        let worktree = dir.path().join("elsewhere/feature");
        std::fs::create_dir_all(&worktree).expect("wt");
        let admin = main.join(".git/worktrees/feature");
        std::fs::create_dir_all(&admin).expect("admin");
        std::fs::write(admin.join("commondir"), "../..\n").expect("commondir");
        std::fs::write(
            worktree.join(".git"),
            format!("gitdir: {}\n", admin.display()),
        )
        .expect(".git file");
        for cwd in [&main, &sub, &worktree] {
            let identity = project_identity(cwd, None);
            assert_eq!(identity.id, "acme-webapp", "{}", cwd.display());
            assert_eq!(identity.source, ProjectSource::Origin);
            assert_eq!(
                identity.git_common_dir.as_deref(),
                Some(main.join(".git").as_path())
            );
        }
    }

    #[test]
    fn without_a_remote_the_repository_folder_names_it_and_an_override_wins() {
        let dir = tempfile::tempdir().expect("dir");
        let main = dir.path().join("My Tool");
        repo(&main, None);
        let sub = main.join("src");
        std::fs::create_dir_all(&sub).expect("sub");
        let identity = project_identity(&sub, None);
        assert_eq!(
            (identity.id.as_str(), identity.source),
            ("my-tool", ProjectSource::Repository)
        );
        let chosen = project_identity(&sub, Some("platform"));
        assert_eq!(
            (chosen.id.as_str(), chosen.source),
            ("platform", ProjectSource::Override)
        );
        // An override that is not a project id is ignored, not trusted.
        assert_eq!(
            project_identity(&sub, Some("a b")).source,
            ProjectSource::Repository
        );
        let plain = dir.path().join("notes.d");
        std::fs::create_dir_all(&plain).expect("plain");
        let identity = project_identity(&plain, None);
        assert_eq!(
            (identity.id.as_str(), identity.source),
            ("notes-d", ProjectSource::Directory)
        );
        let windows = project_identity(Path::new(r"C:\Users\dev\WebApp"), None);
        assert_eq!(
            windows.id, "webapp",
            "a Windows path's last folder, any case"
        );
    }

    #[test]
    fn every_id_is_valid() {
        for name in ["", "---", "ÄÖÜ", &"x".repeat(200), "a.b c/d"] {
            let id = sanitize(name);
            assert!(is_valid_project_id(&id), "{name:?} -> {id:?}");
        }
        assert_eq!(sanitize(&"x".repeat(200)).len(), MAX_PROJECT_ID_LEN);
    }
}
