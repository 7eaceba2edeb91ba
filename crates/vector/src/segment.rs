//! [`SegmentData`]: an immutable, sealed set of documents — their metadata, their
//! normalized vectors and an HNSW graph over them — and its file.
//!
//! The graph is instant-distance's [`Hnsw`], which owns the points, so the vectors are
//! stored once, inside it; a merge or rebuild reads them back instead of re-embedding.
//! Local ids (`u32`) are positions in the graph's point order, which is also the order
//! of `metas`. What changes after sealing (which documents are deleted) is not here but
//! in the index's state and the manifest.
//!
//! The body of a segment file ([`crate::format`]) is postcard of:
//!
//! ```text
//! dims: u32, ef_construction: u32, ef_search: u32, seed: u64,
//! metas: [DocMeta { key: { project_id, doc_type, doc_id }, level, session_id, timestamp_ms }],
//! hnsw: instant_distance::Hnsw<Embedding(Box<[f32]>)> (ef_search, points, layers)
//! ```
//!
//! Both `ef_search` fields record the build's; a load replaces the graph's with the
//! index's configured one (see `decode_graph`).
//!
//! In the graph's bytes the points come right after its `ef_search` and their count,
//! each a varint length (`dims`) and `dims` little-endian f32: rows of one stride
//! ([`RowsLayout`]). A segment that is always scanned exactly (no more documents than
//! `exact_scan_max_docs`) never searches its graph, and reads its f32 vectors only to
//! re-score a search's best int8 candidates and for a merge: it drops the graph once its
//! file is written and reads those rows from the file ([`SegmentData::read_vectors_from_file`]),
//! so the vectors stay in the page cache, not in the process (147 MiB of f32 at
//! 116 681 documents).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use instant_distance::{Hnsw, PointId};
use serde::{Deserialize, Serialize};

use crate::distance::{Embedding, dot};
use crate::doc::DocMeta;
use crate::quantized::{QuantizedQuery, QuantizedVectors, RowRun};
use crate::{Result, VectorError, format};

/// The HNSW parameters of a build, recorded in the segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BuildParams {
    pub(crate) dims: usize,
    pub(crate) ef_construction: usize,
    pub(crate) ef_search: usize,
    pub(crate) seed: u64,
}

/// Where the f32 vectors are in a segment file's body: row `i` (local id `i`) starts at
/// `first + i × stride` with a `prefix`-byte varint length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowsLayout {
    first: u64,
    stride: u64,
    prefix: usize,
}

/// Where a segment's f32 vectors are read from.
enum Vectors {
    /// The graph's points, in memory.
    Graph {
        hnsw: Hnsw<Embedding>,
        /// Local id → the graph's point id (the identity, kept so the graph's points
        /// are reached through its public API).
        point_ids: Vec<PointId>,
        /// Where the vectors are in the segment file's body, once encoded or decoded.
        layout_opt: Option<RowsLayout>,
    },
    /// The rows of the segment's file (kept open: a merge may unlink it while a search
    /// still reads it).
    File {
        file: File,
        path: PathBuf,
        layout: RowsLayout,
    },
}

/// A sealed segment's contents. Immutable; shared with merge jobs behind an `Arc`.
pub(crate) struct SegmentData {
    params: BuildParams,
    vectors: Vectors,
    metas: Vec<DocMeta>,
    /// Each project's documents: what an exact scan reads.
    by_project: HashMap<String, ProjectRows>,
    /// The vectors in int8, for exact scans (derived, not stored), grouped by project:
    /// a scan of one project then streams through contiguous rows instead of skipping
    /// the other projects' rows (at 100 000 documents in the year's four projects, a
    /// one-thread search of the largest, 40 % of them, took 2.1 ms instead of 3.6).
    quantized: QuantizedVectors,
}

/// One project's documents in a segment.
#[derive(Debug, Default)]
struct ProjectRows {
    /// Their local ids, ascending.
    local_ids: Vec<u32>,
    /// The int8 row of `local_ids[0]`; the others follow in order.
    first_row: usize,
}

impl std::fmt::Debug for SegmentData {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SegmentData")
            .field("params", &self.params)
            .field("num_docs", &self.metas.len())
            .finish_non_exhaustive()
    }
}

/// The body of a segment file up to its graph (the graph follows).
#[derive(Serialize)]
struct SegmentHeadRef<'a> {
    dims: u32,
    ef_construction: u32,
    ef_search: u32,
    seed: u64,
    metas: &'a [DocMeta],
}

/// Everything of a segment body before the graph.
#[derive(Deserialize)]
struct SegmentHead {
    dims: u32,
    ef_construction: u32,
    ef_search: u32,
    seed: u64,
    metas: Vec<DocMeta>,
}

/// The graph of a segment body searched with `ef_search` candidates, whatever it was
/// built with. instant-distance keeps `ef_search` in a private field set by its
/// builder, and serializes it first (a postcard varint), so the field is rewritten in
/// the bytes before they are decoded: `ef_search` stays a search-time setting that can
/// change without rebuilding any graph. The round-trip test pins the layout.
fn decode_graph(path: &Path, bytes: &[u8], ef_search: usize) -> Result<Hnsw<Embedding>> {
    let undecodable =
        |error: postcard::Error| VectorError::corrupt(path, format!("undecodable graph: {error}"));
    let (_built_with, graph): (usize, &[u8]) =
        postcard::take_from_bytes(bytes).map_err(undecodable)?;
    let mut patched = postcard::to_allocvec(&ef_search).map_err(undecodable)?;
    patched.extend_from_slice(graph);
    let (hnsw, rest): (Hnsw<Embedding>, &[u8]) =
        postcard::take_from_bytes(&patched).map_err(undecodable)?;
    if !rest.is_empty() {
        return Err(VectorError::corrupt(
            path,
            format!("{} bytes after the segment", rest.len()),
        ));
    }
    Ok(hnsw)
}

impl SegmentData {
    /// Builds the graph over `docs` (at least one). Slow: seconds for thousands of
    /// 384-dimensional vectors, on rayon's global pool. Each doc carries a `tag` (the
    /// caller's bookkeeping), returned reordered to the segment's local ids.
    pub(crate) fn build<T>(
        params: BuildParams,
        docs: Vec<(DocMeta, Embedding, T)>,
    ) -> (Self, Vec<T>) {
        debug_assert!(!docs.is_empty());
        let mut metas_in = Vec::with_capacity(docs.len());
        let mut points = Vec::with_capacity(docs.len());
        let mut tags_in = Vec::with_capacity(docs.len());
        for (meta, embedding, tag) in docs {
            debug_assert_eq!(embedding.0.len(), params.dims);
            metas_in.push(meta);
            points.push(embedding);
            tags_in.push(tag);
        }
        let (hnsw, point_ids_of_inputs) = instant_distance::Builder::default()
            .ef_construction(params.ef_construction)
            .ef_search(params.ef_search)
            .seed(params.seed)
            .build_hnsw(points);
        // Input i became point `point_ids_of_inputs[i]`: reorder metas and tags to
        // point order.
        let mut order: Vec<(u32, usize)> = point_ids_of_inputs
            .iter()
            .enumerate()
            .map(|(input, point_id)| (point_id.into_inner(), input))
            .collect();
        order.sort_unstable();
        let mut metas_slots: Vec<Option<DocMeta>> = metas_in.into_iter().map(Some).collect();
        let mut tags_slots: Vec<Option<T>> = tags_in.into_iter().map(Some).collect();
        let mut metas = Vec::with_capacity(order.len());
        let mut tags = Vec::with_capacity(order.len());
        for (_, input) in order {
            if let (Some(meta), Some(tag)) = (metas_slots[input].take(), tags_slots[input].take()) {
                metas.push(meta);
                tags.push(tag);
            }
        }
        debug_assert_eq!(metas.len(), point_ids_of_inputs.len());
        (Self::assemble(params, hnsw, metas, None), tags)
    }

    fn assemble(
        params: BuildParams,
        hnsw: Hnsw<Embedding>,
        metas: Vec<DocMeta>,
        layout_opt: Option<RowsLayout>,
    ) -> Self {
        let point_ids: Vec<PointId> = hnsw.iter().map(|(point_id, _)| point_id).collect();
        let mut by_project: HashMap<String, ProjectRows> = HashMap::new();
        for (local_id, meta) in metas.iter().enumerate() {
            by_project
                .entry(meta.key.project_id.clone())
                .or_default()
                .local_ids
                .push(local_id as u32);
        }
        // Rows project after project (by name, so the layout is reproducible).
        let mut projects: Vec<(&String, &mut ProjectRows)> = by_project.iter_mut().collect();
        projects.sort_unstable_by(|left, right| left.0.cmp(right.0));
        let mut scan_order = Vec::with_capacity(metas.len());
        for (_, rows) in projects {
            rows.first_row = scan_order.len();
            scan_order.extend_from_slice(&rows.local_ids);
        }
        let quantized = QuantizedVectors::new(
            params.dims,
            scan_order
                .iter()
                .map(|local_id| &hnsw[point_ids[*local_id as usize]].0[..]),
        );
        Self {
            params,
            vectors: Vectors::Graph {
                hnsw,
                point_ids,
                layout_opt,
            },
            metas,
            by_project,
            quantized,
        }
    }

    /// Whether the graph is in memory (a search can go through it).
    pub(crate) fn has_graph(&self) -> bool {
        matches!(self.vectors, Vectors::Graph { .. })
    }

    /// Drops the graph and reads the f32 vectors from the segment's file at `path`
    /// from now on (`path` holds the body this segment was encoded to or decoded from,
    /// after the [`crate::format`] header). Checks the first and last rows against the
    /// vectors in memory first; on any mismatch or error the segment stays as it was
    /// and the error says why.
    pub(crate) fn read_vectors_from_file(&mut self, path: &Path) -> Result<()> {
        let Vectors::Graph {
            hnsw,
            point_ids,
            layout_opt,
        } = &self.vectors
        else {
            return Ok(());
        };
        let layout = layout_opt.ok_or_else(|| {
            VectorError::corrupt(path, "the segment's vector rows are not located")
        })?;
        let file = File::open(path).map_err(|error| VectorError::io(path, error))?;
        let last = (self.metas.len() - 1) as u32;
        for local_id in [0, last] {
            let row = read_row(&file, path, layout, self.params.dims, local_id)?;
            if row[..] != hnsw[point_ids[local_id as usize]].0[..] {
                return Err(VectorError::corrupt(
                    path,
                    format!("vector row {local_id} in the file differs from the segment's"),
                ));
            }
        }
        self.vectors = Vectors::File {
            file,
            path: path.to_path_buf(),
            layout,
        };
        Ok(())
    }

    /// Documents in the segment, deleted ones included.
    pub(crate) fn len(&self) -> usize {
        self.metas.len()
    }

    pub(crate) fn params(&self) -> BuildParams {
        self.params
    }

    pub(crate) fn metas(&self) -> &[DocMeta] {
        &self.metas
    }

    pub(crate) fn meta(&self, local_id: u32) -> &DocMeta {
        &self.metas[local_id as usize]
    }

    /// A document's f32 vector; an I/O error when it is read from a file that fails.
    pub(crate) fn vector(&self, local_id: u32) -> Result<Cow<'_, [f32]>> {
        match &self.vectors {
            Vectors::Graph {
                hnsw, point_ids, ..
            } => Ok(Cow::Borrowed(&hnsw[point_ids[local_id as usize]].0[..])),
            Vectors::File { file, path, layout } => {
                read_row(file, path, *layout, self.params.dims, local_id).map(Cow::Owned)
            }
        }
    }

    /// The local ids of `project_id`'s documents, ascending.
    pub(crate) fn project_local_ids(&self, project_id: &str) -> &[u32] {
        self.by_project
            .get(project_id)
            .map_or(&[], |rows| rows.local_ids.as_slice())
    }

    /// About `query · vector` of each document of `project_id` (of every project when
    /// `None`) that `keep` keeps (given its local id), from the int8 copy (see
    /// [`crate::quantized`]), handed to `found` with its local id; returns how many.
    pub(crate) fn approx_scan(
        &self,
        query: &QuantizedQuery,
        project_id_opt: Option<&str>,
        mut keep: impl FnMut(u32) -> bool,
        mut found: impl FnMut(f32, u32),
    ) -> u64 {
        let scan_rows = |rows: &ProjectRows| {
            self.quantized.scan(
                query,
                RowRun {
                    first_row: rows.first_row,
                    local_ids: &rows.local_ids,
                },
                &mut keep,
                &mut found,
            )
        };
        match project_id_opt {
            Some(project_id) => self.by_project.get(project_id).map_or(0, scan_rows),
            None => self.by_project.values().map(scan_rows).sum(),
        }
    }

    /// `query · vector` of a document.
    pub(crate) fn score(&self, query: &[f32], local_id: u32) -> Result<f32> {
        Ok(dot(query, &self.vector(local_id)?))
    }

    /// The graph's approximate nearest documents to `query`, nearest first: at most
    /// `ef_search` (set when the graph was built or loaded), unfiltered; none when the
    /// graph is not in memory ([`SegmentData::has_graph`]).
    pub(crate) fn nearest(&self, query: &Embedding) -> Vec<u32> {
        let Vectors::Graph { hnsw, .. } = &self.vectors else {
            return Vec::new();
        };
        let mut search = instant_distance::Search::default();
        hnsw.search(query, &mut search)
            .map(|item| item.pid.into_inner())
            .collect()
    }

    /// The body of the segment file (of a segment whose graph is in memory: a built
    /// one). Records where its vector rows are.
    pub(crate) fn encode(&mut self) -> Result<Vec<u8>> {
        let encode_error = |error: postcard::Error| VectorError::Encode {
            what: "segment",
            message: error.to_string(),
        };
        let Vectors::Graph {
            hnsw, layout_opt, ..
        } = &mut self.vectors
        else {
            return Err(VectorError::Encode {
                what: "segment",
                message: "its graph is no longer in memory".to_owned(),
            });
        };
        let head = SegmentHeadRef {
            dims: self.params.dims as u32,
            ef_construction: self.params.ef_construction as u32,
            ef_search: self.params.ef_search as u32,
            seed: self.params.seed,
            metas: &self.metas,
        };
        // A struct is its fields one after the other in postcard, so the body is the
        // head's bytes followed by the graph's.
        let body = postcard::to_allocvec(&head).map_err(encode_error)?;
        let graph_offset = body.len();
        let body = postcard::to_extend(hnsw, body).map_err(encode_error)?;
        *layout_opt = rows_layout(
            graph_offset,
            &body[graph_offset..],
            self.metas.len(),
            self.params.dims,
        );
        Ok(body)
    }

    /// Decodes a segment file's body (already checked by [`crate::format::body`]),
    /// checks it against the index's `dims`, and sets the graph's `ef_search` (the
    /// number of candidates a graph search keeps) to `ef_search`.
    pub(crate) fn decode(path: &Path, body: &[u8], dims: usize, ef_search: usize) -> Result<Self> {
        let (head, graph): (SegmentHead, &[u8]) = postcard::take_from_bytes(body)
            .map_err(|error| VectorError::corrupt(path, format!("undecodable segment: {error}")))?;
        if head.dims as usize != dims {
            return Err(VectorError::IndexDimensions {
                path: path.display().to_string(),
                on_disk: head.dims as usize,
                configured: dims,
            });
        }
        if head.ef_search == 0 || ef_search == 0 {
            return Err(VectorError::corrupt(path, "ef_search is 0"));
        }
        let hnsw = decode_graph(path, graph, ef_search)?;
        let num_points = hnsw.iter().count();
        let params = BuildParams {
            dims,
            ef_construction: head.ef_construction as usize,
            ef_search,
            seed: head.seed,
        };
        let num_docs = head.metas.len();
        if num_points != num_docs {
            return Err(VectorError::corrupt(
                path,
                format!("{num_points} vectors but {num_docs} documents"),
            ));
        }
        if num_docs > u32::MAX as usize {
            return Err(VectorError::corrupt(path, "more documents than local ids"));
        }
        if let Some((_, point)) = hnsw.iter().find(|(_, point)| point.0.len() != dims) {
            return Err(VectorError::corrupt(
                path,
                format!(
                    "a vector of {} dimensions in a segment of {dims}",
                    point.0.len()
                ),
            ));
        }
        let layout = rows_layout(body.len() - graph.len(), graph, num_docs, dims);
        Ok(Self::assemble(params, hnsw, head.metas, layout))
    }
}

/// Where the points are in a graph's bytes (`graph`, at `graph_offset` in the body):
/// after its `ef_search` and the points' count, each row a varint length and `dims`
/// f32. `None` when the bytes do not start that way (then the vectors stay in memory).
fn rows_layout(
    graph_offset: usize,
    graph: &[u8],
    num_points: usize,
    dims: usize,
) -> Option<RowsLayout> {
    let (_ef_search, rest): (usize, &[u8]) = postcard::take_from_bytes(graph).ok()?;
    let (count, rest): (usize, &[u8]) = postcard::take_from_bytes(rest).ok()?;
    if count != num_points || num_points == 0 {
        return None;
    }
    let prefix = postcard::to_allocvec(&dims).ok()?;
    if !rest.starts_with(&prefix) {
        return None;
    }
    let stride = prefix.len() + dims * 4;
    if rest.len() < stride * num_points {
        return None;
    }
    Some(RowsLayout {
        first: (format::HEADER_LEN + graph_offset + graph.len() - rest.len()) as u64,
        stride: stride as u64,
        prefix: prefix.len(),
    })
}

/// Row `local_id` of a segment file laid out as `layout`.
fn read_row(
    file: &File,
    path: &Path,
    layout: RowsLayout,
    dims: usize,
    local_id: u32,
) -> Result<Vec<f32>> {
    let mut bytes = vec![0u8; layout.stride as usize];
    file.read_exact_at(
        &mut bytes,
        layout.first + u64::from(local_id) * layout.stride,
    )
    .map_err(|error| VectorError::io(path, error))?;
    let values: Vec<f32> = bytes[layout.prefix..]
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect();
    debug_assert_eq!(values.len(), dims);
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::normalize;
    use crate::doc::{DocKey, DocType};

    fn meta(doc_id: &str, project_id: &str) -> DocMeta {
        DocMeta {
            key: DocKey::new(project_id, DocType::Event, doc_id),
            level: None,
            session_id: None,
            timestamp_ms: 7,
        }
    }

    fn params(dims: usize) -> BuildParams {
        BuildParams {
            dims,
            ef_construction: 20,
            ef_search: 20,
            seed: 1,
        }
    }

    #[test]
    fn build_keeps_each_meta_with_its_vector_and_round_trips() -> Result<()> {
        let docs: Vec<(DocMeta, Embedding, usize)> = (0..50)
            .map(|i| {
                let angle = i as f32 * 0.1;
                let vector = normalize(&[angle.cos(), angle.sin(), 0.5], 3)?;
                let project = if i % 2 == 0 { "even" } else { "odd" };
                Ok((meta(&format!("d{i}"), project), Embedding(vector.into()), i))
            })
            .collect::<Result<_>>()?;
        let expected: Vec<(String, Vec<f32>)> = docs
            .iter()
            .map(|(meta, embedding, _)| (meta.key.doc_id.clone(), embedding.0.to_vec()))
            .collect();
        let (mut data, tags) = SegmentData::build(params(3), docs);
        assert_eq!(data.len(), 50);
        for local_id in 0..50u32 {
            let input = tags[local_id as usize];
            assert_eq!(data.meta(local_id).key.doc_id, expected[input].0);
            assert_eq!(data.vector(local_id)?.to_vec(), expected[input].1);
        }
        assert_eq!(data.project_local_ids("even").len(), 25);
        assert!(data.project_local_ids("none").is_empty());
        // The nearest point to a stored vector is itself.
        let nearest = data.nearest(&Embedding(data.vector(17)?.into()));
        assert_eq!(nearest.first(), Some(&17));

        let body = data.encode()?;
        let decoded = SegmentData::decode(Path::new("s"), &body, 3, 20)?;
        assert_eq!(decoded.metas(), data.metas());
        assert_eq!(decoded.params(), data.params());
        for local_id in 0..50u32 {
            assert_eq!(decoded.vector(local_id)?, data.vector(local_id)?);
        }
        assert!(matches!(
            SegmentData::decode(Path::new("s"), &body, 4, 20),
            Err(VectorError::IndexDimensions {
                on_disk: 3,
                configured: 4,
                ..
            })
        ));
        assert!(matches!(
            SegmentData::decode(Path::new("s"), &body[..body.len() / 2], 3, 20),
            Err(VectorError::Corrupt { .. })
        ));
        Ok(())
    }

    /// `ef_search` is set at load: the graph returns that many candidates, whatever it
    /// was built with (this pins instant-distance's serialized layout).
    #[test]
    fn ef_search_is_set_when_a_segment_loads() -> Result<()> {
        let docs: Vec<(DocMeta, Embedding, ())> = (0..300)
            .map(|i| {
                let angle = i as f32 * 0.02;
                let vector = normalize(&[angle.cos(), angle.sin(), (i % 7) as f32 * 0.1], 3)?;
                Ok((meta(&format!("d{i}"), "p"), Embedding(vector.into()), ()))
            })
            .collect::<Result<_>>()?;
        let (mut data, _) = SegmentData::build(params(3), docs);
        let query = Embedding(data.vector(42)?.into());
        assert_eq!(data.nearest(&query).len(), 20);
        let body = data.encode()?;
        for ef_search in [7, 20, 150] {
            let loaded = SegmentData::decode(Path::new("s"), &body, 3, ef_search)?;
            assert_eq!(loaded.params().ef_search, ef_search);
            let nearest = loaded.nearest(&query);
            assert_eq!(nearest.len(), ef_search);
            assert_eq!(nearest.first(), Some(&42));
        }
        assert!(matches!(
            SegmentData::decode(Path::new("s"), &body, 3, 0),
            Err(VectorError::Corrupt { .. })
        ));
        Ok(())
    }

    /// The int8 rows are grouped by project, yet a scan of a project reports each of its
    /// documents once, in local-id order, with the score of that document's own row.
    #[test]
    fn a_project_scan_reads_that_projects_rows() -> Result<()> {
        let dims = 20;
        let projects = ["b", "a", "c", "a", "a", "c", "b"];
        let docs: Vec<(DocMeta, Embedding, ())> = (0..200)
            .map(|i| {
                let raw: Vec<f32> = (0..dims)
                    .map(|d| ((i * 7 + d * 13) as f32 * 0.37).sin())
                    .collect();
                let vector = normalize(&raw, dims)?;
                let project = projects[i % projects.len()];
                Ok((
                    meta(&format!("d{i}"), project),
                    Embedding(vector.into()),
                    (),
                ))
            })
            .collect::<Result<_>>()?;
        let (data, _) = SegmentData::build(params(dims), docs);
        let vectors: Vec<Vec<f32>> = (0..data.len() as u32)
            .map(|local_id| data.vector(local_id).map(Cow::into_owned))
            .collect::<Result<_>>()?;
        let in_local_order = QuantizedVectors::new(dims, vectors.iter().map(Vec::as_slice));
        let query = QuantizedQuery::new(&vectors[3]);
        for project in ["a", "b", "c", "none"] {
            let mut found = Vec::new();
            let num_scored = data.approx_scan(
                &query,
                Some(project),
                |_| true,
                |score, local_id| {
                    found.push((score, local_id));
                },
            );
            let expected: Vec<(f32, u32)> = data
                .project_local_ids(project)
                .iter()
                .map(|&local_id| (in_local_order.score(&query, local_id as usize), local_id))
                .collect();
            assert_eq!(found, expected, "{project}");
            assert_eq!(num_scored, expected.len() as u64);
            assert!(
                data.project_local_ids(project).iter().all(|&local_id| data
                    .meta(local_id)
                    .key
                    .project_id
                    == project)
            );
        }
        // No project: every project's run, each row once.
        let mut all_local_ids = Vec::new();
        let num_scored = data.approx_scan(
            &query,
            None,
            |_| true,
            |_, local_id| {
                all_local_ids.push(local_id);
            },
        );
        all_local_ids.sort_unstable();
        assert_eq!(all_local_ids, (0..data.len() as u32).collect::<Vec<_>>());
        assert_eq!(num_scored, data.len() as u64);
        assert_eq!(data.project_local_ids("a").len(), 86);
        Ok(())
    }

    #[test]
    fn a_single_document_segment_searches() -> Result<()> {
        let vector = normalize(&[1.0, 0.0], 2)?;
        let (data, _) = SegmentData::build(
            params(2),
            vec![(meta("only", "p"), Embedding(vector.into()), ())],
        );
        assert_eq!(data.nearest(&Embedding(vec![0.0, 1.0].into())), vec![0]);
        Ok(())
    }

    /// A segment written to its file reads its vectors from there, the same as from
    /// memory, also after the file is unlinked (a merge removes it while a search may
    /// still read it); a file whose rows differ is refused, the graph kept.
    #[test]
    fn vectors_read_from_the_file_equal_those_in_memory() -> Result<()> {
        let dims = 24;
        let docs: Vec<(DocMeta, Embedding, ())> = (0..120)
            .map(|i| {
                let raw: Vec<f32> = (0..dims)
                    .map(|d| ((i * 5 + d * 11) as f32 * 0.29).cos())
                    .collect();
                let vector = normalize(&raw, dims)?;
                Ok((meta(&format!("d{i}"), "p"), Embedding(vector.into()), ()))
            })
            .collect::<Result<_>>()?;
        let dir = tempfile::tempdir().map_err(|error| VectorError::io(Path::new("tmp"), error))?;
        let path = dir.path().join("seg");
        for decoded in [false, true] {
            let (mut data, _) = SegmentData::build(params(dims), docs.clone());
            let body = data.encode()?;
            format::write_synced(&path, &format::header(format::SEGMENT_MAGIC, &body), &body)?;
            let in_memory: Vec<Vec<f32>> = (0..data.len() as u32)
                .map(|local_id| data.vector(local_id).map(Cow::into_owned))
                .collect::<Result<_>>()?;
            let mut data = if decoded {
                SegmentData::decode(&path, &body, dims, 20)?
            } else {
                data
            };
            assert!(data.has_graph());
            data.read_vectors_from_file(&path)?;
            assert!(!data.has_graph());
            assert!(
                data.nearest(&Embedding(in_memory[0].clone().into()))
                    .is_empty()
            );
            std::fs::remove_file(&path).map_err(|error| VectorError::io(&path, error))?;
            for (local_id, vector) in in_memory.iter().enumerate() {
                assert_eq!(&data.vector(local_id as u32)?[..], &vector[..]);
                let score = data.score(vector, local_id as u32)?;
                assert!((score - 1.0).abs() < 1e-5, "{score}");
            }
        }
        // Rows that are not the segment's: refused, the graph stays.
        let (mut data, _) = SegmentData::build(params(dims), docs.clone());
        let body = data.encode()?;
        let Vectors::Graph {
            layout_opt: Some(layout),
            ..
        } = data.vectors
        else {
            panic!("an encoded segment knows where its rows are");
        };
        let mut other = body.clone();
        other[layout.first as usize - format::HEADER_LEN + layout.prefix] ^= 0x40;
        format::write_synced(
            &path,
            &format::header(format::SEGMENT_MAGIC, &other),
            &other,
        )?;
        assert!(matches!(
            data.read_vectors_from_file(&path),
            Err(VectorError::Corrupt { .. })
        ));
        assert!(data.has_graph());
        Ok(())
    }
}
