//! The fresh buffer: documents not yet sealed, kept flat for an exact scan.

use crate::doc::DocMeta;

/// The fresh buffer: documents not yet sealed, vectors flat for an exact scan.
pub(super) struct Buffer {
    dims: usize,
    pub(super) metas: Vec<DocMeta>,
    pub(super) vectors: Vec<f32>,
    pub(super) versions: Vec<u64>,
}

impl Buffer {
    pub(super) fn new(dims: usize) -> Self {
        Self {
            dims,
            metas: Vec::new(),
            vectors: Vec::new(),
            versions: Vec::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.metas.len()
    }

    pub(super) fn vector(&self, slot: usize) -> &[f32] {
        &self.vectors[slot * self.dims..(slot + 1) * self.dims]
    }

    pub(super) fn push(&mut self, meta: DocMeta, vector: &[f32], version: u64) -> u32 {
        debug_assert_eq!(vector.len(), self.dims);
        self.metas.push(meta);
        self.vectors.extend_from_slice(vector);
        self.versions.push(version);
        (self.metas.len() - 1) as u32
    }

    pub(super) fn replace(&mut self, slot: usize, meta: DocMeta, vector: &[f32], version: u64) {
        self.metas[slot] = meta;
        self.vectors[slot * self.dims..(slot + 1) * self.dims].copy_from_slice(vector);
        self.versions[slot] = version;
    }

    /// Removes `slot` by moving the last document into it.
    pub(super) fn swap_remove(&mut self, slot: usize) {
        let last = self.metas.len() - 1;
        self.metas.swap_remove(slot);
        self.versions.swap_remove(slot);
        if slot != last {
            self.vectors
                .copy_within(last * self.dims..(last + 1) * self.dims, slot * self.dims);
        }
        self.vectors.truncate(last * self.dims);
    }
}
