//! The framing every file of the index shares, and the file operations the manifest
//! switch is made of.
//!
//! A file is a 24-byte header followed by a postcard body:
//!
//! ```text
//! offset  size  field
//! 0       8     magic: "AMVECMAN" (manifest) or "AMVECSEG" (segment)
//! 8       4     format version, u32 little-endian (FORMAT_VERSION)
//! 12      8     body length in bytes, u64 little-endian
//! 20      4     CRC-32 (IEEE) of the body, u32 little-endian
//! 24      …     body: postcard
//! ```
//!
//! Reading checks, in order, the magic, the version, the length and the checksum, so a
//! file from a newer build is reported as such even when its body changed shape, and a
//! flipped bit anywhere is [`VectorError::Corrupt`], never a wrong vector.

use std::fs;
use std::io::Write;
use std::path::Path;

use crate::{Result, VectorError};

/// The version of every file this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// Magic of the manifest.
pub(crate) const MANIFEST_MAGIC: [u8; 8] = *b"AMVECMAN";
/// Magic of a segment file.
pub(crate) const SEGMENT_MAGIC: [u8; 8] = *b"AMVECSEG";
pub(crate) const HEADER_LEN: usize = 24;

/// The manifest: the committed state (see [`crate::index`]).
pub const MANIFEST_FILE: &str = "MANIFEST";
/// The manifest being written; renamed over [`MANIFEST_FILE`] once synced.
pub const MANIFEST_TMP_FILE: &str = "MANIFEST.tmp";
const SEGMENT_PREFIX: &str = "seg-";
const SEGMENT_SUFFIX: &str = ".vseg";

/// `seg-<id, 20 digits>.vseg`.
#[must_use]
pub(crate) fn segment_file_name(segment_id: u64) -> String {
    format!("{SEGMENT_PREFIX}{segment_id:020}{SEGMENT_SUFFIX}")
}

/// The id in a segment file name, `None` for any other name.
pub(crate) fn parse_segment_file_name(name: &str) -> Option<u64> {
    let digits = name
        .strip_prefix(SEGMENT_PREFIX)?
        .strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The 24-byte header of a file with `body`.
pub(crate) fn header(magic: [u8; 8], body: &[u8]) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&magic);
    header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header[12..20].copy_from_slice(&(body.len() as u64).to_le_bytes());
    header[20..24].copy_from_slice(&crc32(body).to_le_bytes());
    header
}

/// The body of the file `bytes` read from `path` and its checksum, after checking
/// magic, version, length and checksum.
pub(crate) fn body<'a>(path: &Path, magic: [u8; 8], bytes: &'a [u8]) -> Result<(&'a [u8], u32)> {
    let what = if magic == MANIFEST_MAGIC {
        "a vector index manifest"
    } else {
        "a vector index segment"
    };
    if bytes.len() < HEADER_LEN {
        return Err(VectorError::corrupt(
            path,
            format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte header",
                bytes.len()
            ),
        ));
    }
    let (header, body) = bytes.split_at(HEADER_LEN);
    if header[..8] != magic {
        return Err(VectorError::corrupt(
            path,
            format!("not {what} (wrong magic)"),
        ));
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if version != FORMAT_VERSION {
        return Err(VectorError::UnsupportedFormatVersion {
            path: path.display().to_string(),
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let mut length_bytes = [0u8; 8];
    length_bytes.copy_from_slice(&header[12..20]);
    let length = u64::from_le_bytes(length_bytes);
    if length != body.len() as u64 {
        return Err(VectorError::corrupt(
            path,
            format!(
                "the header says {length} body bytes, the file has {}",
                body.len()
            ),
        ));
    }
    let expected = u32::from_le_bytes([header[20], header[21], header[22], header[23]]);
    let actual = crc32(body);
    if expected != actual {
        return Err(VectorError::corrupt(
            path,
            format!("checksum mismatch: header {expected:#010x}, body {actual:#010x}"),
        ));
    }
    Ok((body, actual))
}

/// Writes `header` and `body` to a new file at `path` (replacing any) and fsyncs it,
/// in synced steps ([`memory_paced::PacedFile`]: the index shares the disk with the
/// event log, whose acknowledgements wait for fsyncs). The directory entry is synced
/// separately ([`sync_dir`]).
pub(crate) fn write_synced(path: &Path, header: &[u8], body: &[u8]) -> Result<()> {
    let write = || -> std::io::Result<()> {
        let mut file = memory_paced::PacedFile::new(fs::File::create(path)?);
        file.write_all(header)?;
        file.write_all(body)?;
        file.into_file().sync_all()
    };
    write().map_err(|error| VectorError::io(path, error))
}

/// Fsyncs the directory, making created, renamed and removed entries durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir)
        .and_then(|directory| directory.sync_all())
        .map_err(|error| VectorError::io(dir, error))
}

const CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut index = 0;
    while index < 256 {
        let mut value = index as u32;
        let mut bit = 0;
        while bit < 8 {
            value = if value & 1 == 1 {
                0xEDB8_8320 ^ (value >> 1)
            } else {
                value >> 1
            };
            bit += 1;
        }
        table[index] = value;
        index += 1;
    }
    table
}

/// CRC-32 (IEEE 802.3, the one of zip and PNG).
#[must_use]
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc = CRC_TABLE[((crc ^ u32::from(byte)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_the_ieee_one() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn segment_file_names_round_trip_and_reject_others() {
        let name = segment_file_name(42);
        assert_eq!(name, "seg-00000000000000000042.vseg");
        assert_eq!(parse_segment_file_name(&name), Some(42));
        assert_eq!(
            parse_segment_file_name(&segment_file_name(u64::MAX)),
            Some(u64::MAX)
        );
        for other in [
            "seg-42.vseg",
            "seg-0000000000000000004x.vseg",
            "MANIFEST",
            "seg-.vseg",
        ] {
            assert_eq!(parse_segment_file_name(other), None, "{other}");
        }
    }

    #[test]
    fn body_checks_magic_version_length_and_checksum() {
        let path = Path::new("file");
        let body_bytes = b"hello".to_vec();
        let mut file = header(SEGMENT_MAGIC, &body_bytes).to_vec();
        file.extend_from_slice(&body_bytes);
        assert_eq!(
            body(path, SEGMENT_MAGIC, &file).ok(),
            Some((&b"hello"[..], crc32(b"hello")))
        );

        let corrupt_reason = |bytes: &[u8], magic| match body(path, magic, bytes) {
            Err(VectorError::Corrupt { reason, .. }) => reason,
            other => panic!("expected Corrupt, got {other:?}"),
        };
        assert!(corrupt_reason(&file, MANIFEST_MAGIC).contains("wrong magic"));
        assert!(corrupt_reason(&file[..10], SEGMENT_MAGIC).contains("shorter"));
        assert!(corrupt_reason(&file[..file.len() - 1], SEGMENT_MAGIC).contains("body bytes"));
        let mut flipped = file.clone();
        flipped[HEADER_LEN + 1] ^= 1;
        assert!(corrupt_reason(&flipped, SEGMENT_MAGIC).contains("checksum"));

        let mut future = file.clone();
        future[8..12].copy_from_slice(&2u32.to_le_bytes());
        assert!(matches!(
            body(path, SEGMENT_MAGIC, &future),
            Err(VectorError::UnsupportedFormatVersion {
                found: 2,
                supported: 1,
                ..
            })
        ));
    }
}
