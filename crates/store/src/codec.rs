//! The one place records are turned into bytes (projections use it too): a format-version byte, then postcard.
//!
//! postcard is compact, fast, maintained and has a documented stable wire format; it is
//! not self-describing, so records never use `skip_serializing_if` and new fields go in a
//! new record version, with the old version still decoded (fixture tests below).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Result, StoreError};

/// Encodes `value` behind its format version byte.
pub fn encode<T: Serialize>(what: &'static str, version: u8, value: &T) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(64);
    bytes.push(version);
    postcard::to_extend(value, bytes).map_err(|err| StoreError::Codec {
        op: "encode",
        what,
        detail: err.to_string(),
    })
}

/// Splits the version byte off a record.
pub fn version_of<'a>(what: &'static str, bytes: &'a [u8]) -> Result<(u8, &'a [u8])> {
    match bytes.split_first() {
        Some((version, body)) => Ok((*version, body)),
        None => Err(StoreError::Codec {
            op: "decode",
            what,
            detail: "empty record".into(),
        }),
    }
}

/// Decodes a record body (after the version byte).
pub fn decode_body<T: DeserializeOwned>(what: &'static str, body: &[u8]) -> Result<T> {
    postcard::from_bytes(body).map_err(|err| StoreError::Codec {
        op: "decode",
        what,
        detail: err.to_string(),
    })
}

/// Decodes a record whose only known version is `version`.
pub fn decode<T: DeserializeOwned>(what: &'static str, version: u8, bytes: &[u8]) -> Result<T> {
    let (found, body) = version_of(what, bytes)?;
    if found != version {
        return Err(StoreError::UnknownVersion {
            what,
            found,
            supported: version,
        });
    }
    decode_body(what, body)
}

/// Reads and decodes the record stored under `key`, `None` when there is none: the one
/// way projections read their own records.
///
/// # Errors
/// Storage failures, or a record of another version.
pub fn get_record<T: DeserializeOwned>(
    keyspace: &fjall::Keyspace,
    key: impl AsRef<[u8]>,
    what: &'static str,
    version: u8,
) -> Result<Option<T>> {
    match keyspace.get(key)? {
        Some(bytes) => Ok(Some(decode(what, version, &bytes)?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks_the_version() {
        let bytes = encode("pair", 3, &(7u64, "x".to_owned())).expect("encode");
        assert_eq!(bytes[0], 3);
        let back: (u64, String) = decode("pair", 3, &bytes).expect("decode");
        assert_eq!(back, (7, "x".to_owned()));
        assert!(matches!(
            decode::<(u64, String)>("pair", 2, &bytes),
            Err(StoreError::UnknownVersion {
                found: 3,
                supported: 2,
                ..
            })
        ));
        assert!(decode::<(u64, String)>("pair", 3, &[]).is_err());
        assert!(decode::<(u64, String)>("pair", 3, &[3, 0xff]).is_err());
    }
}
