//! The directory on disk: [`VectorIndex::open`] loads and checks it, [`VectorIndex::commit`] switches its manifest.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use super::buffer::Buffer;
use super::config::VectorConfig;
use super::key_map::{KeyAt, KeyMap, Location};
use super::segment_state::SegmentState;
use super::state::{VectorIndex, new_instance_id};
use crate::format::{
    self, MANIFEST_FILE, MANIFEST_MAGIC, MANIFEST_TMP_FILE, SEGMENT_MAGIC, segment_file_name,
};
use crate::manifest::{Manifest, ManifestRef, ManifestSegment};
use crate::segment::SegmentData;
use crate::{Result, VectorError};

impl VectorIndex {
    /// Opens the index in `dir`, creating the directory if needed. A directory without
    /// a manifest opens empty ([`VectorIndex::last_payload`] is `None`). Otherwise every
    /// segment the manifest names is loaded and checked; a missing segment file
    /// ([`VectorError::MissingSegment`]), other dimensions
    /// ([`VectorError::IndexDimensions`]), another format version or any corruption is an
    /// error, never a silently empty index. Once everything has loaded, files the
    /// manifest does not name (leftovers of a crash) are removed.
    pub fn open(dir: impl Into<PathBuf>, config: VectorConfig) -> Result<Self> {
        config.validate()?;
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|error| VectorError::io(&dir, error))?;
        let mut index = Self {
            buffer: Buffer::new(config.dims),
            dir,
            config,
            instance_id: new_instance_id(),
            next_version: 1,
            next_segment_id: 1,
            segments: BTreeMap::new(),
            locations: KeyMap::default(),
            seal_token: Weak::new(),
            files_to_remove: Vec::new(),
            last_payload_opt: None,
            commit_seq: 0,
            manifest_len: 0,
            dirty: false,
        };
        let manifest_path = index.dir.join(MANIFEST_FILE);
        match fs::read(&manifest_path) {
            Ok(bytes) => index.load(&manifest_path, &bytes)?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(VectorError::io(&manifest_path, error)),
        }
        index.remove_unnamed_files()?;
        tracing::info!(
            dir = %index.dir.display(),
            num_docs = index.locations.len(),
            num_buffered = index.buffer.len(),
            num_segments = index.segments.len(),
            "vector index opened"
        );
        Ok(index)
    }

    fn load(&mut self, manifest_path: &Path, bytes: &[u8]) -> Result<()> {
        let dims = self.config.dims;
        let (body, _) = format::body(manifest_path, MANIFEST_MAGIC, bytes)?;
        let manifest: Manifest = postcard::from_bytes(body).map_err(|error| {
            VectorError::corrupt(manifest_path, format!("undecodable manifest: {error}"))
        })?;
        if manifest.dims as usize != dims {
            return Err(VectorError::IndexDimensions {
                path: manifest_path.display().to_string(),
                on_disk: manifest.dims as usize,
                configured: dims,
            });
        }
        for entry in &manifest.segments {
            if entry.id >= manifest.next_segment_id {
                return Err(VectorError::corrupt(
                    manifest_path,
                    format!(
                        "segment {} is not below next_segment_id {}",
                        entry.id, manifest.next_segment_id
                    ),
                ));
            }
            self.load_segment(entry)?;
        }
        if manifest.buffer_vectors.len() != manifest.buffer_metas.len() * dims {
            return Err(VectorError::corrupt(
                manifest_path,
                format!(
                    "{} buffered vector values for {} documents of {dims} dimensions",
                    manifest.buffer_vectors.len(),
                    manifest.buffer_metas.len()
                ),
            ));
        }
        for (meta, vector) in manifest
            .buffer_metas
            .into_iter()
            .zip(manifest.buffer_vectors.chunks_exact(dims))
        {
            let hash = self.locations.hash(&meta.key);
            if self
                .locations
                .find(hash, &meta.key, &self.key_at())
                .is_some()
            {
                return Err(VectorError::corrupt(
                    manifest_path,
                    "a buffered document is also live elsewhere",
                ));
            }
            let version = self.next_version();
            let slot = self.buffer.push(meta, vector, version);
            self.locations.insert_new(hash, Location::Buffer(slot));
        }
        self.next_segment_id = manifest.next_segment_id;
        self.commit_seq = manifest.commit_seq;
        self.last_payload_opt = Some(manifest.payload);
        self.manifest_len = bytes.len() as u64;
        Ok(())
    }

    fn load_segment(&mut self, entry: &ManifestSegment) -> Result<()> {
        let path = self.dir.join(segment_file_name(entry.id));
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(VectorError::MissingSegment {
                    path: path.display().to_string(),
                });
            }
            Err(error) => return Err(VectorError::io(&path, error)),
        };
        let (body, crc) = format::body(&path, SEGMENT_MAGIC, &bytes)?;
        if bytes.len() as u64 != entry.file_len || crc != entry.file_crc {
            return Err(VectorError::corrupt(
                &path,
                format!(
                    "{} bytes with checksum {crc:#010x}, the manifest says {} bytes with {:#010x}",
                    bytes.len(),
                    entry.file_len,
                    entry.file_crc
                ),
            ));
        }
        let mut data = SegmentData::decode(&path, body, self.config.dims, self.config.ef_search)?;
        drop(bytes);
        self.release_graph(&mut data, &path);
        if data.len() != entry.num_docs as usize {
            return Err(VectorError::corrupt(
                &path,
                format!(
                    "{} documents, the manifest says {}",
                    data.len(),
                    entry.num_docs
                ),
            ));
        }
        let mut state = SegmentState::new(Arc::new(data), entry.file_len, entry.file_crc);
        for &local_id in &entry.deleted {
            if local_id as usize >= state.data.len() || !state.delete(local_id) {
                return Err(VectorError::corrupt(
                    &path,
                    format!("the manifest deletes local id {local_id} twice or out of range"),
                ));
            }
        }
        // Installed first, so the key map can read the keys of this segment's documents
        // filed before the next (a document twice in one segment is found too).
        self.segments.insert(entry.id, state);
        let key_at = KeyAt {
            buffer: &self.buffer,
            segments: &self.segments,
        };
        let segment = &self.segments[&entry.id];
        for local_id in 0..segment.data.len() as u32 {
            if segment.is_deleted(local_id) {
                continue;
            }
            let key = &segment.data.meta(local_id).key;
            let hash = self.locations.hash(key);
            if self.locations.find(hash, key, &key_at).is_some() {
                return Err(VectorError::corrupt(
                    &path,
                    format!("local id {local_id} is a document also live elsewhere"),
                ));
            }
            self.locations.insert_new(
                hash,
                Location::Segment {
                    segment_id: entry.id,
                    local_id,
                },
            );
        }
        Ok(())
    }

    /// Removes `MANIFEST.tmp` and segment files the manifest does not name. Other files
    /// are left alone.
    fn remove_unnamed_files(&self) -> Result<()> {
        let entries = fs::read_dir(&self.dir).map_err(|error| VectorError::io(&self.dir, error))?;
        for entry in entries {
            let entry = entry.map_err(|error| VectorError::io(&self.dir, error))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let leftover = name == MANIFEST_TMP_FILE
                || format::parse_segment_file_name(&name)
                    .is_some_and(|segment_id| !self.segments.contains_key(&segment_id));
            if leftover {
                tracing::info!(file = %name, "removing a vector index file the manifest does not name");
                fs::remove_file(entry.path())
                    .map_err(|error| VectorError::io(&entry.path(), error))?;
            }
        }
        Ok(())
    }

    /// Removes the index directory and everything in it (for a rebuild that starts
    /// over). A directory that does not exist is not an error.
    pub fn destroy(dir: &Path) -> Result<()> {
        match fs::remove_dir_all(dir) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(VectorError::io(dir, error)),
        }
    }

    /// Makes every change durable, atomically with `payload` (the consumer's outbox
    /// cursor): a new manifest (buffer, deletions, segment list, payload) is written to
    /// `MANIFEST.tmp`, synced, and renamed over `MANIFEST` (see the module docs). Then
    /// the files of segments merged away are removed. On error the last commit stays the
    /// durable state and the call can be retried.
    pub fn commit(&mut self, payload: &str) -> Result<()> {
        let segments = self
            .segments
            .iter()
            .map(|(&id, segment)| ManifestSegment {
                id,
                num_docs: segment.data.len() as u32,
                file_len: segment.file_len,
                file_crc: segment.file_crc,
                deleted: segment.deleted_ids(),
            })
            .collect();
        let manifest = ManifestRef {
            dims: self.config.dims as u32,
            commit_seq: self.commit_seq + 1,
            payload,
            next_segment_id: self.next_segment_id,
            segments,
            buffer_metas: &self.buffer.metas,
            buffer_vectors: &self.buffer.vectors,
        };
        let body = postcard::to_allocvec(&manifest).map_err(|error| VectorError::Encode {
            what: "manifest",
            message: error.to_string(),
        })?;
        let header = format::header(MANIFEST_MAGIC, &body);
        let temporary = self.dir.join(MANIFEST_TMP_FILE);
        let manifest_path = self.dir.join(MANIFEST_FILE);
        format::write_synced(&temporary, &header, &body)?;
        format::sync_dir(&self.dir)?;
        fs::rename(&temporary, &manifest_path)
            .map_err(|error| VectorError::io(&manifest_path, error))?;
        format::sync_dir(&self.dir)?;

        self.commit_seq += 1;
        self.manifest_len = (header.len() + body.len()) as u64;
        self.last_payload_opt = Some(payload.to_owned());
        self.dirty = false;
        for (name, _) in std::mem::take(&mut self.files_to_remove) {
            let path = self.dir.join(&name);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                // Harmless: the next open removes files the manifest does not name.
                Err(error) => {
                    tracing::warn!(file = %name, %error, "cannot remove an obsolete vector segment file")
                }
            }
        }
        Ok(())
    }

    /// The payload of the last commit, `None` for an index never committed: the
    /// durable value (what [`VectorIndex::open`] would read back).
    #[must_use]
    pub fn last_payload(&self) -> Option<&str> {
        self.last_payload_opt.as_deref()
    }

    /// Whether anything changed since the last commit.
    #[must_use]
    pub fn has_uncommitted_changes(&self) -> bool {
        self.dirty
    }
}
