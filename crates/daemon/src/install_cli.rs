//! `install claude-code` / `uninstall claude-code`: the plugin's hooks and MCP server
//! written into Claude Code's own settings, for users who do not install plugins.
//!
//! - `--user` (default): hooks in `~/.claude/settings.json`, the MCP server in
//!   `~/.claude.json` (`mcpServers`, user scope);
//! - `--project [DIR]`: hooks in `DIR/.claude/settings.json`, the MCP server in
//!   `DIR/.mcp.json` (both meant to be committed, so a team shares them).
//!
//! The entries are the plugin's (`deploy/claude-code/hooks/hooks.json` and `.mcp.json`,
//! compiled in) with `memory-daemon` replaced by this binary's absolute path, so they
//! work whatever PATH the agent runs with. What is already in the files is kept: other
//! hooks, other servers, every other key. An entry of ours already there is not added
//! twice; a file that is not valid JSON is left alone with an error; the previous file
//! is kept as `<name>.agent-memory.bak`. `uninstall` removes exactly our entries.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Map, Value};

use crate::cli::{AgentArg, InstallArgs};

/// The plugin's hooks, the single source of both install paths.
const PLUGIN_HOOKS: &str = include_str!("../../../deploy/claude-code/hooks/hooks.json");
/// The plugin's MCP server declaration.
const PLUGIN_MCP: &str = include_str!("../../../deploy/claude-code/.mcp.json");
/// The name our MCP server is declared under.
const SERVER_NAME: &str = "agent-memory";
/// What marks a hook command as ours.
const HOOK_MARK: &str = " hook claude-code";

/// Where the two entries go.
struct Targets {
    settings: PathBuf,
    mcp: PathBuf,
}

fn targets(args: &InstallArgs) -> anyhow::Result<Targets> {
    if let Some(project) = &args.project {
        let dir = match project {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().context("no current directory")?,
        };
        return Ok(Targets {
            settings: dir.join(".claude/settings.json"),
            mcp: dir.join(".mcp.json"),
        });
    }
    let home = dirs::home_dir().context("no home directory")?;
    Ok(Targets {
        settings: home.join(".claude/settings.json"),
        mcp: home.join(".claude.json"),
    })
}

/// The command that runs this binary (quoted when its path has spaces).
fn binary() -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("cannot tell where memory-daemon is")?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let text = exe.to_string_lossy().into_owned();
    Ok(if text.contains(' ') {
        format!("\"{text}\"")
    } else {
        text
    })
}

pub fn run(args: &InstallArgs, uninstall: bool) -> anyhow::Result<ExitCode> {
    if args.agent != AgentArg::ClaudeCode {
        bail!(
            "install writes Claude Code's settings; for Codex, add `memory-daemon hook codex` to its hooks and `memory-daemon mcp` to its MCP servers (docs/agents.md)"
        );
    }
    let targets = targets(args)?;
    let binary = binary()?;
    let hooks = plugin_hooks(&binary)?;
    let server = plugin_server(&binary)?;
    let settings = read_json(&targets.settings)?;
    let mcp = read_json(&targets.mcp)?;
    let (settings_after, mcp_after) = if uninstall {
        (remove_hooks(settings.clone()), remove_server(mcp.clone()))
    } else {
        (
            add_hooks(settings.clone(), &hooks),
            add_server(mcp.clone(), server),
        )
    };
    for (path, before, after) in [
        (&targets.settings, settings, settings_after),
        (&targets.mcp, mcp, mcp_after),
    ] {
        if before == after {
            println!("{}: unchanged", path.display());
        } else {
            write_json(path, &before, &after)?;
            println!("{}: updated", path.display());
        }
    }
    if !uninstall {
        println!(
            "Claude Code now runs `{binary} hook claude-code` on its hooks and `{binary} mcp` as the `agent-memory` MCP server; start `memory-daemon serve` (and NATS) so hooks reach it, and restart Claude Code."
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The plugin's `hooks` object with `memory-daemon` replaced by `binary`.
fn plugin_hooks(binary: &str) -> anyhow::Result<Map<String, Value>> {
    let mut plugin: Value =
        serde_json::from_str(PLUGIN_HOOKS).context("the plugin's hooks.json")?;
    let Some(Value::Object(hooks)) = plugin.get_mut("hooks").map(Value::take) else {
        bail!("the plugin's hooks.json has no hooks object");
    };
    let mut hooks = Value::Object(hooks);
    replace_binary(&mut hooks, binary);
    match hooks {
        Value::Object(hooks) => Ok(hooks),
        _ => bail!("the plugin's hooks are not an object"),
    }
}

/// The plugin's `agent-memory` server with `memory-daemon` replaced by `binary`.
fn plugin_server(binary: &str) -> anyhow::Result<Value> {
    let plugin: Value = serde_json::from_str(PLUGIN_MCP).context("the plugin's .mcp.json")?;
    let mut server = plugin
        .pointer(&format!("/mcpServers/{SERVER_NAME}"))
        .cloned()
        .context("the plugin's .mcp.json declares no agent-memory server")?;
    if let Some(command) = server.get_mut("command") {
        *command = Value::String(binary.trim_matches('"').to_owned());
    }
    Ok(server)
}

fn replace_binary(value: &mut Value, binary: &str) {
    match value {
        Value::String(text) if text.starts_with("memory-daemon ") => {
            *text = format!("{binary}{}", &text["memory-daemon".len()..]);
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| replace_binary(item, binary)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|item| replace_binary(item, binary)),
        _ => {}
    }
}

fn is_our_hook(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|command| command.contains(HOOK_MARK) && command.contains("memory-daemon"))
}

/// `entries` without our hooks: an entry that held only ours goes, one that also holds
/// the user's keeps theirs.
fn without_ours(entries: &mut Vec<Value>) {
    for entry in entries.iter_mut() {
        if let Some(Value::Array(hooks)) = entry.get_mut("hooks") {
            hooks.retain(|hook| !is_our_hook(hook));
        }
    }
    entries.retain(|entry| {
        entry
            .get("hooks")
            .and_then(Value::as_array)
            .is_none_or(|hooks| !hooks.is_empty())
    });
}

/// `settings` with our entry under every hook event, keeping everything there; an event
/// that already has an entry of ours gets it replaced (a moved binary).
fn add_hooks(mut settings: Value, ours: &Map<String, Value>) -> Value {
    let root = object(&mut settings);
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let hooks = object(hooks);
    for (event, entries) in ours {
        let list = hooks
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(list) = list {
            without_ours(list);
            if let Value::Array(new) = entries {
                list.extend(new.iter().cloned());
            }
        }
    }
    settings
}

/// `settings` without our hook entries (and without the events and `hooks` object that
/// only held them).
fn remove_hooks(mut settings: Value) -> Value {
    let Some(Value::Object(hooks)) = settings.get_mut("hooks") else {
        return settings;
    };
    for list in hooks.values_mut() {
        if let Value::Array(entries) = list {
            without_ours(entries);
        }
    }
    hooks.retain(|_, list| !list.as_array().is_some_and(Vec::is_empty));
    if hooks.is_empty()
        && let Value::Object(root) = &mut settings
    {
        root.remove("hooks");
    }
    settings
}

fn add_server(mut config: Value, server: Value) -> Value {
    let root = object(&mut config);
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    object(servers).insert(SERVER_NAME.to_owned(), server);
    config
}

fn remove_server(mut config: Value) -> Value {
    if let Some(Value::Object(servers)) = config.get_mut("mcpServers") {
        servers.remove(SERVER_NAME);
        if servers.is_empty()
            && let Value::Object(root) = &mut config
        {
            root.remove("mcpServers");
        }
    }
    config
}

/// `value` as an object, made one if it is not (a settings file holding `null`).
fn object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("made an object above"),
    }
}

/// The file's JSON, `{}` when it does not exist; an error (nothing written) when it is
/// not JSON.
fn read_json(path: &Path) -> anyhow::Result<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(Value::Object(Map::new())),
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not valid JSON; fix it or move it away, nothing was changed",
                path.display()
            )
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Map::new())),
        Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes `after` atomically in place of `path` (through a symlink to its target, with
/// the file's permissions), keeping the file as it was before the first install as
/// `<name>.agent-memory.bak` (an existing backup is not overwritten).
fn write_json(path: &Path, before: &Value, after: &Value) -> anyhow::Result<()> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let permissions = std::fs::metadata(&path).ok().map(|meta| meta.permissions());
    let mut backup = path.as_os_str().to_owned();
    backup.push(".agent-memory.bak");
    if path.exists()
        && before.as_object().is_none_or(|map| !map.is_empty())
        && !Path::new(&backup).exists()
    {
        std::fs::copy(&path, &backup)
            .with_context(|| format!("cannot back up {}", path.display()))?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".agent-memory.tmp");
    let mut text = serde_json::to_string_pretty(after)?;
    text.push('\n');
    std::fs::write(&temporary, text)
        .with_context(|| format!("cannot write {}", PathBuf::from(&temporary).display()))?;
    if let Some(permissions) = permissions {
        std::fs::set_permissions(&temporary, permissions)
            .with_context(|| format!("cannot set the permissions of {}", path.display()))?;
    }
    std::fs::rename(&temporary, &path).with_context(|| format!("cannot replace {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BIN: &str = "/opt/agent memory/memory-daemon";

    fn ours() -> Map<String, Value> {
        plugin_hooks(&format!("\"{BIN}\"")).expect("plugin hooks")
    }

    #[test]
    fn installing_keeps_what_is_there_and_twice_is_once() {
        let settings = json!({
            "model": "opus",
            "hooks": {
                "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}]
            }
        });
        let once = add_hooks(settings.clone(), &ours());
        let twice = add_hooks(once.clone(), &ours());
        assert_eq!(once, twice, "idempotent");
        assert_eq!(once["model"], "opus");
        let post = once["hooks"]["PostToolUse"].as_array().expect("list");
        assert_eq!(post.len(), 2, "the user's hook kept: {post:?}");
        assert_eq!(post[0]["hooks"][0]["command"], "prettier --write");
        let command = post[1]["hooks"][0]["command"].as_str().expect("command");
        assert_eq!(command, format!("\"{BIN}\" hook claude-code"));
        for event in [
            "SessionStart",
            "UserPromptSubmit",
            "Stop",
            "SessionEnd",
            "PreCompact",
        ] {
            assert!(once["hooks"][event].is_array(), "{event}");
        }
        // Uninstalling gives back exactly what the user had.
        assert_eq!(remove_hooks(once), settings);
        // A user's hook sharing an entry with ours stays when ours goes.
        let shared = json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "notify-send done"},
            {"type": "command", "command": "/usr/bin/memory-daemon hook claude-code"}
        ]}]}});
        let removed = remove_hooks(shared);
        assert_eq!(
            removed["hooks"]["Stop"][0]["hooks"],
            json!([{"type": "command", "command": "notify-send done"}])
        );
        assert_eq!(remove_hooks(add_hooks(json!({}), &ours())), json!({}));
    }

    #[test]
    fn the_mcp_server_is_added_beside_others_and_removed_alone() {
        let config = json!({"mcpServers": {"github": {"command": "gh-mcp"}}, "numStartups": 3});
        let server = plugin_server(BIN).expect("server");
        assert_eq!(server["command"], BIN);
        assert_eq!(server["args"], json!(["mcp"]));
        let added = add_server(config.clone(), server);
        assert_eq!(added["mcpServers"]["github"]["command"], "gh-mcp");
        assert_eq!(added["numStartups"], 3);
        assert_eq!(remove_server(added), config);
        assert_eq!(
            remove_server(json!({"mcpServers": {"agent-memory": {}}})),
            json!({})
        );
    }

    #[test]
    fn a_broken_settings_file_is_not_overwritten() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{ \"hooks\": ").expect("write");
        let err = read_json(&path).expect_err("not JSON");
        assert!(
            format!("{err:#}").contains("nothing was changed"),
            "{err:#}"
        );
        assert_eq!(
            read_json(&dir.path().join("missing.json")).expect("missing"),
            json!({})
        );
        write_json(&path, &json!({"a": 1}), &json!({"a": 2})).expect("write");
        assert_eq!(read_json(&path).expect("read"), json!({"a": 2}));
        let backup = dir.path().join("settings.json.agent-memory.bak");
        assert_eq!(
            std::fs::read_to_string(&backup).expect("backup"),
            "{ \"hooks\": "
        );
        // A second write keeps the first backup, and the file's permissions.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
            write_json(&path, &json!({"a": 2}), &json!({"a": 3})).expect("write");
            assert_eq!(
                std::fs::read_to_string(&backup).expect("backup"),
                "{ \"hooks\": "
            );
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
