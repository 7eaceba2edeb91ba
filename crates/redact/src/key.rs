//! The tag key: 32 random bytes in the data dir, made at first start and never shown.
//! Tags are only comparable under one key, so every process that redacts for one log
//! (the daemon, `ingest --file`, the hooks writing their spool) must read the same file,
//! and two that start at once must not each make their own.

use std::io::Write;
use std::path::Path;

use crate::RedactError;

/// Bytes of a new key.
const KEY_BYTES: usize = 32;
/// Fewest bytes a key file may hold.
const MIN_KEY_BYTES: usize = 16;

/// Reads the key at `path`, or makes one there: owner-only on Unix, written whole to a
/// temporary file of this process and then linked into place, which fails when another
/// process got there first — then its key is read and used, so processes starting
/// together agree on one key, and a crash leaves no half key.
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
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix)
        .map_err(|err| RedactError::Key(format!("no OS randomness for a new key: {err}")))?;
    let suffix: String = suffix.iter().map(|byte| format!("{byte:02x}")).collect();
    let temporary = path.with_extension(format!("tmp-{}-{suffix}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&temporary)?;
        file.write_all(&key)?;
        file.sync_all()
    };
    let linked = write().and_then(|()| match std::fs::hard_link(&temporary, path) {
        // A file system without hard links (SMB, exFAT, some FUSE): an exclusive create
        // of the key file itself. A process racing it may then read it before it is
        // whole and fail with "fewer than 16 bytes"; its next start reads the key.
        Err(err)
            if err.kind() != std::io::ErrorKind::AlreadyExists
                && err.kind() != std::io::ErrorKind::NotFound =>
        {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let mut file = options.open(path)?;
            file.write_all(&key)?;
            file.sync_all()
        }
        other => other,
    });
    let _ = std::fs::remove_file(&temporary);
    if linked.is_ok() {
        // The new name is durable only once its directory is.
        if let Ok(dir) = std::fs::File::open(directory) {
            let _ = dir.sync_all();
        }
    }
    match linked {
        Ok(()) => {}
        // Another process made it meanwhile: use its key.
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => return load_existing(path),
        Err(err) => return Err(RedactError::Key(format!("writing {shown}: {err}"))),
    }
    Ok(key)
}

/// The key another process just made.
fn load_existing(path: &Path) -> Result<Vec<u8>, RedactError> {
    match std::fs::read(path) {
        Ok(key) if key.len() >= MIN_KEY_BYTES => Ok(key),
        Ok(key) => Err(RedactError::Key(format!(
            "{} holds {} bytes, fewer than {MIN_KEY_BYTES}",
            path.display(),
            key.len()
        ))),
        Err(err) => Err(RedactError::Key(format!(
            "reading {}: {err}",
            path.display()
        ))),
    }
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
        // Many makers at once agree on one key.
        let racing = dir.path().join("racing.key");
        let keys: Vec<Vec<u8>> = std::thread::scope(|scope| {
            let makers: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| load_or_create_key(&racing).expect("key")))
                .collect();
            makers
                .into_iter()
                .map(|maker| maker.join().expect("join"))
                .collect()
        });
        assert!(keys.iter().all(|key| *key == keys[0]), "one key for all");
        let leftovers = std::fs::read_dir(dir.path()).expect("dir").count();
        assert_eq!(leftovers, 2, "no temporary files left");
        std::fs::write(&path, b"short").expect("write");
        let err = load_or_create_key(&path).expect_err("short key");
        assert!(err.to_string().contains("5 bytes"), "{err}");
    }
}
