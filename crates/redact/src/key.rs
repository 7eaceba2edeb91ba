//! The tag key: 32 random bytes in the data dir, made at first start and never shown.
//! Tags are only comparable under one key, so every daemon that writes one log must use
//! the same file (cluster mode points `[redaction] key_file` at a shared one).

use std::io::Write;
use std::path::Path;

use crate::RedactError;

/// Bytes of a new key.
const KEY_BYTES: usize = 32;
/// Fewest bytes a key file may hold.
const MIN_KEY_BYTES: usize = 16;

/// Reads the key at `path`, or makes one there (owner-only on Unix, written to a
/// temporary file and renamed, so a crash leaves no half key).
///
/// # Errors
/// [`RedactError::Key`] when the file cannot be read or written, or is shorter than 16
/// bytes.
pub fn load_or_create_key(path: &Path) -> Result<Vec<u8>, RedactError> {
    let shown = path.display();
    match std::fs::read(path) {
        Ok(key) if key.len() >= MIN_KEY_BYTES => return Ok(key),
        Ok(key) => {
            return Err(RedactError::Key(format!(
                "{shown} holds {} bytes, fewer than {MIN_KEY_BYTES}; remove it to make a new key (earlier tags will no longer match)",
                key.len()
            )));
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(RedactError::Key(format!("reading {shown}: {err}"))),
    }
    let mut key = vec![0u8; KEY_BYTES];
    getrandom::fill(&mut key)
        .map_err(|err| RedactError::Key(format!("no OS randomness for a new key: {err}")))?;
    let directory = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(directory)
        .map_err(|err| RedactError::Key(format!("creating {}: {err}", directory.display())))?;
    let temporary = path.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&temporary)?;
        file.write_all(&key)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    };
    write().map_err(|err| RedactError::Key(format!("writing {shown}: {err}")))?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_then_read() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("redaction.key");
        let first = load_or_create_key(&path).expect("made");
        assert_eq!(first.len(), KEY_BYTES);
        assert_eq!(load_or_create_key(&path).expect("read"), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, b"short").expect("write");
        let err = load_or_create_key(&path).expect_err("short key");
        assert!(err.to_string().contains("5 bytes"), "{err}");
    }
}
