//! [`KeyMap`]: where each live document is, found by its key without keeping a copy of
//! the key.
//!
//! Why: the key's strings (project and doc id) are already in the document's metadata,
//! in the buffer or its segment. A `HashMap<DocKey, Location>` kept a second copy of
//! both strings and a 72-byte slot per document: ~145 bytes a document more than this
//! map, 18 MiB at 132 646 documents (docs/benchmarks.md, "The vector index's key map
//! without copies of the keys"), near a twentieth of the daemon's memory target. Here a
//! slot is the key's hash and the location (24 bytes); a lookup compares the key it is
//! given with the one at a candidate location, which the caller reads for it ([`KeyAt`]).
//!
//! Moves name the entry by its current location (unique among live documents), so a
//! document can be moved while its old place is already gone.

use std::collections::BTreeMap;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::buffer::Buffer;
use super::segment_state::SegmentState;
use crate::doc::DocKey;

/// Where a live document is: a slot of the buffer, or a document of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Location {
    Buffer(u32),
    Segment { segment_id: u64, local_id: u32 },
}

/// One live document: its key's hash and where it is.
#[derive(Clone, Copy, Debug)]
struct Entry {
    hash: u64,
    location: Location,
}

/// Reads the key of the document at a location.
pub(super) struct KeyAt<'a> {
    pub(super) buffer: &'a Buffer,
    pub(super) segments: &'a BTreeMap<u64, SegmentState>,
}

impl<'a> KeyAt<'a> {
    /// The key at `location`, or `None` if nothing is there (never for a live entry).
    pub(super) fn key(&self, location: Location) -> Option<&'a DocKey> {
        match location {
            Location::Buffer(slot) => self.buffer.metas.get(slot as usize).map(|meta| &meta.key),
            Location::Segment {
                segment_id,
                local_id,
            } => self
                .segments
                .get(&segment_id)
                .filter(|segment| (local_id as usize) < segment.data.len())
                .map(|segment| &segment.data.meta(local_id).key),
        }
    }
}

/// Live documents by key (see the module doc).
#[derive(Default)]
pub(super) struct KeyMap {
    table: HashTable<Entry>,
    hasher: std::collections::hash_map::RandomState,
}

impl KeyMap {
    /// The hash a key is filed under.
    pub(super) fn hash(&self, key: &DocKey) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Where the document with `key` is.
    pub(super) fn get(&self, key: &DocKey, key_at: &KeyAt<'_>) -> Option<Location> {
        self.find(self.hash(key), key, key_at)
    }

    /// [`KeyMap::get`] for a key whose [`KeyMap::hash`] the caller has.
    pub(super) fn find(&self, hash: u64, key: &DocKey, key_at: &KeyAt<'_>) -> Option<Location> {
        self.table
            .find(hash, |entry| {
                entry.hash == hash && key_at.key(entry.location) == Some(key)
            })
            .map(|entry| entry.location)
    }

    /// Files a document the map does not hold yet (the caller has checked).
    pub(super) fn insert_new(&mut self, hash: u64, location: Location) {
        self.table
            .insert_unique(hash, Entry { hash, location }, |entry| entry.hash);
    }

    /// Moves the document filed under `hash` at `from` to `to`; false if none is there.
    pub(super) fn relocate(&mut self, hash: u64, from: Location, to: Location) -> bool {
        match self
            .table
            .find_mut(hash, |entry| entry.hash == hash && entry.location == from)
        {
            Some(entry) => {
                entry.location = to;
                true
            }
            None => false,
        }
    }

    /// Forgets the document with `key` (whose [`KeyMap::hash`] the caller has) in one
    /// probe; returns where it was.
    pub(super) fn remove_key(
        &mut self,
        hash: u64,
        key: &DocKey,
        key_at: &KeyAt<'_>,
    ) -> Option<Location> {
        self.table
            .find_entry(hash, |entry| {
                entry.hash == hash && key_at.key(entry.location) == Some(key)
            })
            .ok()
            .map(|entry| entry.remove().0.location)
    }

    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    pub(super) fn clear(&mut self) {
        self.table.clear();
    }

    /// Every live document's location, in no particular order.
    pub(super) fn locations(&self) -> impl Iterator<Item = Location> + '_ {
        self.table.iter().map(|entry| entry.location)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{DocMeta, DocType};

    fn meta(doc_id: &str) -> DocMeta {
        DocMeta {
            key: DocKey::new("p", DocType::Event, doc_id),
            level: None,
            session_id: None,
            timestamp_ms: 0,
        }
    }

    fn buffer_of(doc_ids: &[&str]) -> Buffer {
        let mut buffer = Buffer::new(2);
        for (n, doc_id) in doc_ids.iter().enumerate() {
            buffer.push(meta(doc_id), &[1.0, 0.0], n as u64);
        }
        buffer
    }

    /// Two keys filed under one hash (a collision, forced): each lookup finds its own
    /// document, never the other one that shares the hash.
    #[test]
    fn a_lookup_compares_keys_not_only_hashes() {
        let buffer = buffer_of(&["a", "b"]);
        let segments = BTreeMap::new();
        let key_at = KeyAt {
            buffer: &buffer,
            segments: &segments,
        };
        let mut map = KeyMap::default();
        let (a, b) = (&buffer.metas[0].key, &buffer.metas[1].key);
        let hash_a = map.hash(a);
        map.insert_new(hash_a, Location::Buffer(1));
        assert_eq!(map.get(a, &key_at), None, "b filed under a's hash is not a");
        map.insert_new(hash_a, Location::Buffer(0));
        assert_eq!(map.get(a, &key_at), Some(Location::Buffer(0)));
        assert_eq!(
            map.remove_key(hash_a, a, &key_at),
            Some(Location::Buffer(0)),
            "a's own entry goes, not b's under the same hash"
        );
        assert_eq!(map.get(a, &key_at), None);
        assert_eq!(map.len(), 1);
        assert_eq!(
            map.get(b, &key_at),
            None,
            "filed under another hash than b's"
        );
    }

    /// An entry is moved and removed by its location, even where its old place no
    /// longer holds the document (a buffer slot after a swap).
    #[test]
    fn entries_move_and_go_by_location() {
        let mut buffer = buffer_of(&["a", "b", "c"]);
        let segments = BTreeMap::new();
        let mut map = KeyMap::default();
        let hashes: Vec<u64> = buffer.metas.iter().map(|m| map.hash(&m.key)).collect();
        for (slot, hash) in hashes.iter().enumerate() {
            map.insert_new(*hash, Location::Buffer(slot as u32));
        }
        // Remove "a" (slot 0): "c" moves from slot 2 into it.
        let key_at = KeyAt {
            buffer: &buffer,
            segments: &segments,
        };
        assert_eq!(
            map.remove_key(hashes[0], &buffer.metas[0].key, &key_at),
            Some(Location::Buffer(0))
        );
        buffer.swap_remove(0);
        assert!(map.relocate(hashes[2], Location::Buffer(2), Location::Buffer(0)));
        assert!(!map.relocate(hashes[2], Location::Buffer(2), Location::Buffer(1)));
        let key_at = KeyAt {
            buffer: &buffer,
            segments: &segments,
        };
        let c = DocKey::new("p", DocType::Event, "c");
        let b = DocKey::new("p", DocType::Event, "b");
        let a = DocKey::new("p", DocType::Event, "a");
        assert_eq!(map.get(&c, &key_at), Some(Location::Buffer(0)));
        assert_eq!(map.get(&b, &key_at), Some(Location::Buffer(1)));
        assert_eq!(map.get(&a, &key_at), None);
        let mut live: Vec<Location> = map.locations().collect();
        live.sort_by_key(|location| format!("{location:?}"));
        assert_eq!(live, vec![Location::Buffer(0), Location::Buffer(1)]);
        map.clear();
        assert_eq!(map.len(), 0);
    }
}
