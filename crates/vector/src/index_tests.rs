//! Tests of [`VectorIndex`] on real directories: search against brute force, sealing,
//! merging, jobs racing with writes, durability and recovery, a model-based random
//! walk, and the v1 format fixture.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::distance::{dot, normalize};
use crate::doc::{DocKey, DocType, VectorDoc, VectorHit};
use crate::filter::DocSelector;
use crate::format::{self, MANIFEST_FILE, MANIFEST_TMP_FILE};
use crate::jobs::{BuiltSegment, MergeJob, SealJob};
use crate::{Result, VectorError};

/// SplitMix64: a deterministic generator for test data.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Standard normal (Box-Muller).
    fn gaussian(&mut self) -> f32 {
        let u1 = self.uniform().max(1e-7);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    }

    fn gaussian_vector(&mut self, dims: usize, scale: f32) -> Vec<f32> {
        (0..dims).map(|_| self.gaussian() * scale).collect()
    }
}

/// Vectors shaped like sentence embeddings: clusters in a low-dimensional latent space,
/// projected into `dims` dimensions, plus isotropic noise.
struct Clustered {
    projection: Vec<Vec<f32>>,
    centers: Vec<Vec<f32>>,
    dims: usize,
}

impl Clustered {
    const LATENT_DIMS: usize = 24;
    const NOISE: f32 = 3.0;

    fn new(rng: &mut Rng, dims: usize, num_clusters: usize) -> Self {
        Self {
            projection: (0..Self::LATENT_DIMS)
                .map(|_| rng.gaussian_vector(dims, 1.0))
                .collect(),
            centers: (0..num_clusters)
                .map(|_| rng.gaussian_vector(Self::LATENT_DIMS, 1.0))
                .collect(),
            dims,
        }
    }

    fn sample(&self, rng: &mut Rng) -> Vec<f32> {
        let center = &self.centers[rng.below(self.centers.len())];
        let latent: Vec<f32> = center.iter().map(|c| c + rng.gaussian() * 0.5).collect();
        let mut vector = rng.gaussian_vector(self.dims, Self::NOISE);
        for (weight, row) in latent.iter().zip(&self.projection) {
            for (value, r) in vector.iter_mut().zip(row) {
                *value += weight * r;
            }
        }
        vector
    }
}

/// Small thresholds so a handful of documents exercise sealing and merging.
fn small_config(dims: usize) -> VectorConfig {
    VectorConfig {
        seal_threshold: 4,
        merge_factor: 2,
        ef_construction: 40,
        ef_search: 40,
        ..VectorConfig::new(dims)
    }
}

fn doc(project_id: &str, doc_type: DocType, doc_id: &str, vector: Vec<f32>) -> VectorDoc {
    VectorDoc {
        doc_type,
        doc_id: doc_id.to_owned(),
        project_id: project_id.to_owned(),
        session_id: None,
        level: None,
        timestamp_ms: 0,
        vector,
    }
}

fn event(doc_id: &str, vector: Vec<f32>) -> VectorDoc {
    doc("p", DocType::Event, doc_id, vector)
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn ids(hits: &[VectorHit]) -> Vec<&str> {
    hits.iter().map(|hit| hit.doc_id.as_str()).collect()
}

/// The filter, written independently of `DocSelector::selects`.
struct FilterSpec {
    project_id_opt: Option<&'static str>,
    doc_types_opt: Option<Vec<DocType>>,
    level_opt: Option<&'static str>,
    session_id_opt: Option<&'static str>,
    from_ms_opt: Option<u64>,
    to_ms_opt: Option<u64>,
}

impl FilterSpec {
    fn new(project_id: &'static str) -> Self {
        Self {
            project_id_opt: Some(project_id),
            doc_types_opt: None,
            level_opt: None,
            session_id_opt: None,
            from_ms_opt: None,
            to_ms_opt: None,
        }
    }

    fn filter(&self) -> DocSelector {
        let mut filter = DocSelector::all().time_range(self.from_ms_opt, self.to_ms_opt);
        if let Some(project_id) = self.project_id_opt {
            filter = filter.project_id(project_id);
        }
        if let Some(doc_types) = &self.doc_types_opt {
            filter = filter.doc_types(doc_types.iter().copied());
        }
        if let Some(level) = self.level_opt {
            filter = filter.level(level);
        }
        if let Some(session_id) = self.session_id_opt {
            filter = filter.session_id(session_id);
        }
        filter
    }

    fn admits(&self, doc: &VectorDoc) -> bool {
        if let Some(project_id) = self.project_id_opt
            && doc.project_id != project_id
        {
            return false;
        }
        if let Some(doc_types) = &self.doc_types_opt
            && !doc_types.contains(&doc.doc_type)
        {
            return false;
        }
        if let Some(level) = self.level_opt
            && doc.level.as_deref() != Some(level)
        {
            return false;
        }
        if let Some(session_id) = self.session_id_opt
            && doc.session_id.as_deref() != Some(session_id)
        {
            return false;
        }
        self.from_ms_opt.is_none_or(|from| doc.timestamp_ms >= from)
            && self.to_ms_opt.is_none_or(|to| doc.timestamp_ms < to)
    }
}

/// Brute force over `docs`: (key, score) best first, ties by key.
fn brute_force<'a>(
    docs: impl IntoIterator<Item = &'a VectorDoc>,
    query: &[f32],
    spec: &FilterSpec,
    limit: usize,
) -> Vec<(DocKey, f32)> {
    let query = normalize(query, query.len()).expect("query");
    let mut scored: Vec<(DocKey, f32)> = docs
        .into_iter()
        .filter(|doc| spec.admits(doc))
        .map(|doc| {
            let vector = normalize(&doc.vector, doc.vector.len()).expect("vector");
            (doc.key(), dot(&query, &vector))
        })
        .collect();
    scored.sort_by(|left, right| {
        right
            .1
            .total_cmp(&left.1)
            .then_with(|| left.0.cmp(&right.0))
    });
    scored.truncate(limit);
    scored
}

fn keyed(hits: &[VectorHit]) -> Vec<(DocKey, f32)> {
    hits.iter().map(|hit| (hit.key(), hit.score)).collect()
}

#[test]
fn buffer_search_is_exact_cosine_best_first() -> Result<()> {
    let temp = temp_dir();
    let mut index = VectorIndex::open(temp.path(), small_config(3))?;
    index.upsert(event("x", vec![2.0, 0.0, 0.0]))?;
    index.upsert(event("xy", vec![1.0, 1.0, 0.0]))?;
    index.upsert(event("y", vec![0.0, 5.0, 0.0]))?;
    index.upsert(event("minus-x", vec![-1.0, 0.0, 0.0]))?;
    let (hits, stats) =
        index.search_with_stats(&[3.0, 0.0, 0.0], &DocSelector::in_project("p"), 10)?;
    assert_eq!(ids(&hits), ["x", "xy", "y", "minus-x"]);
    let scores: Vec<f32> = hits.iter().map(|hit| hit.score).collect();
    assert!((scores[0] - 1.0).abs() < 1e-6);
    assert!((scores[1] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
    assert!(scores[2].abs() < 1e-6);
    assert!((scores[3] + 1.0).abs() < 1e-6);
    assert_eq!(stats.num_buffer_docs_scored, 4);
    // The limit cuts, 0 returns nothing.
    assert_eq!(
        ids(&index.search(&[3.0, 0.0, 0.0], &DocSelector::in_project("p"), 2)?),
        ["x", "xy"]
    );
    assert!(
        index
            .search(&[3.0, 0.0, 0.0], &DocSelector::in_project("p"), 0)?
            .is_empty()
    );
    // Bad queries are errors.
    assert!(matches!(
        index.search(&[1.0, 0.0], &DocSelector::in_project("p"), 1),
        Err(VectorError::WrongDimensions {
            expected: 3,
            found: 2
        })
    ));
    assert!(matches!(
        index.search(&[0.0; 3], &DocSelector::in_project("p"), 1),
        Err(VectorError::InvalidVector(_))
    ));
    // So are bad documents, which change nothing.
    assert!(
        index
            .upsert(event("nan", vec![f32::NAN, 0.0, 0.0]))
            .is_err()
    );
    assert!(index.upsert(event("short", vec![1.0])).is_err());
    assert_eq!(index.num_docs(), 4);
    Ok(())
}

/// Documents of two projects, every type, some levels and sessions, spread in time.
fn filter_corpus(rng: &mut Rng, dims: usize) -> Vec<VectorDoc> {
    (0..120)
        .map(|i| {
            let project_id = if i % 3 == 0 { "beta" } else { "alpha" };
            let doc_type = DocType::ALL[i % 4];
            VectorDoc {
                doc_type,
                doc_id: format!("d{i}"),
                project_id: project_id.to_owned(),
                session_id: (i % 5 != 0).then(|| format!("s{}", i % 3)),
                level: (doc_type == DocType::TocNode).then(|| ["segment", "day"][i % 2].to_owned()),
                timestamp_ms: 1_000 + (i as u64) * 10,
                vector: rng.gaussian_vector(dims, 1.0),
            }
        })
        .collect()
}

fn filter_specs() -> Vec<FilterSpec> {
    vec![
        FilterSpec::new("alpha"),
        FilterSpec::new("beta"),
        FilterSpec::new("nobody"),
        FilterSpec {
            doc_types_opt: Some(vec![DocType::Grip]),
            ..FilterSpec::new("alpha")
        },
        FilterSpec {
            doc_types_opt: Some(vec![DocType::Event, DocType::TocNode]),
            ..FilterSpec::new("alpha")
        },
        FilterSpec {
            doc_types_opt: Some(vec![]),
            ..FilterSpec::new("alpha")
        },
        FilterSpec {
            level_opt: Some("day"),
            ..FilterSpec::new("alpha")
        },
        FilterSpec {
            session_id_opt: Some("s1"),
            ..FilterSpec::new("beta")
        },
        FilterSpec {
            from_ms_opt: Some(1_300),
            to_ms_opt: Some(1_700),
            ..FilterSpec::new("alpha")
        },
        FilterSpec {
            from_ms_opt: Some(1_500),
            ..FilterSpec::new("alpha")
        },
        FilterSpec {
            to_ms_opt: Some(1_010),
            ..FilterSpec::new("alpha")
        },
        FilterSpec {
            doc_types_opt: Some(vec![DocType::TocNode]),
            level_opt: Some("segment"),
            session_id_opt: Some("s2"),
            from_ms_opt: Some(1_100),
            to_ms_opt: Some(2_000),
            ..FilterSpec::new("alpha")
        },
        // Every project: each segment's projects are scanned one after the other.
        FilterSpec {
            project_id_opt: None,
            ..FilterSpec::new("alpha")
        },
        FilterSpec {
            project_id_opt: None,
            doc_types_opt: Some(vec![DocType::Grip]),
            from_ms_opt: Some(1_300),
            ..FilterSpec::new("alpha")
        },
    ]
}

#[test]
fn filters_are_exact_in_the_buffer_and_in_segments_on_every_path() -> Result<()> {
    let dims = 8;
    let mut rng = Rng(11);
    let docs = filter_corpus(&mut rng, dims);
    let queries: Vec<Vec<f32>> = (0..5).map(|_| rng.gaussian_vector(dims, 1.0)).collect();
    let temp = temp_dir();
    let mut index = VectorIndex::open(
        temp.path(),
        VectorConfig {
            seal_threshold: 50,
            ..small_config(dims)
        },
    )?;
    let check = |index: &VectorIndex, what: &str| -> Result<()> {
        for spec in filter_specs() {
            for query in &queries {
                for limit in [1, 5, 200] {
                    let hits = index.search(query, &spec.filter(), limit)?;
                    let expected = brute_force(&docs, query, &spec, limit);
                    assert_eq!(keyed(&hits), expected, "{what}, limit {limit}");
                }
            }
        }
        Ok(())
    };
    for doc in &docs {
        index.upsert(doc.clone())?;
    }
    check(&index, "buffer")?;
    // Sealed, scanned exactly.
    assert!(index.seal_now(true)?.is_some());
    assert_eq!(index.status().segments.len(), 1);
    check(&index, "one segment")?;
    // Through the graphs: every segment is large enough, and a selective filter falls
    // back to an exact scan, so results are still exact on this small corpus.
    index.config.exact_scan_max_docs = 0;
    index.config.ef_search = 200;
    for doc in docs.iter().take(30) {
        index.upsert(doc.clone())?;
    }
    assert!(index.seal_now(true)?.is_some());
    assert_eq!(index.status().segments.len(), 2);
    check(&index, "graphs")?;
    let (_, stats) = index.search_with_stats(&queries[0], &FilterSpec::new("alpha").filter(), 5)?;
    assert_eq!(stats.num_segments_graph, 1, "{stats:?}");
    assert_eq!(stats.num_segments_exact, 1, "{stats:?}");
    // The same searches with the segments spread over threads (on a machine with two
    // or more cores): the same results and the same counts.
    index.config.parallel_search_min_docs = 0;
    check(&index, "graphs, in parallel")?;
    let (_, parallel) =
        index.search_with_stats(&queries[0], &FilterSpec::new("alpha").filter(), 5)?;
    assert_eq!(parallel, stats);
    Ok(())
}

/// Exact scans of many segments keep one set of int8 candidates per search group (not
/// one per segment) and score only that set in f32: with far more matching documents
/// than candidates, spread over segments and interleaved projects, results still equal
/// brute force, on one thread and spread over threads.
#[test]
fn exact_scans_of_many_segments_share_their_candidates_and_stay_exact() -> Result<()> {
    let dims = 32;
    let mut rng = Rng(23);
    let clustered = Clustered::new(&mut rng, dims, 12);
    let docs: Vec<VectorDoc> = (0..1_000)
        .map(|i| {
            let project_id = ["alpha", "beta", "alpha", "gamma"][i % 4];
            VectorDoc {
                session_id: Some(format!("s{}", i % 3)),
                ..doc(
                    project_id,
                    DocType::ALL[i % 3],
                    &format!("d{i}"),
                    clustered.sample(&mut rng),
                )
            }
        })
        .collect();
    let temp = temp_dir();
    let mut index = VectorIndex::open(
        temp.path(),
        VectorConfig {
            seal_threshold: 150,
            parallel_search_min_docs: usize::MAX,
            ..small_config(dims)
        },
    )?;
    for batch in docs.chunks(150) {
        for doc in batch {
            index.upsert(doc.clone())?;
        }
        index.seal_now(false)?;
    }
    assert_eq!(index.status().segments.len(), 6);
    assert_eq!(index.status().num_buffered, 100);
    let specs = [
        FilterSpec::new("alpha"),
        FilterSpec::new("gamma"),
        FilterSpec {
            doc_types_opt: Some(vec![DocType::Grip, DocType::TocNode]),
            ..FilterSpec::new("alpha")
        },
        FilterSpec {
            session_id_opt: Some("s1"),
            ..FilterSpec::new("beta")
        },
    ];
    let queries: Vec<Vec<f32>> = (0..20).map(|_| clustered.sample(&mut rng)).collect();
    for parallel_search_min_docs in [usize::MAX, 0] {
        index.config.parallel_search_min_docs = parallel_search_min_docs;
        for spec in &specs {
            for query in &queries {
                for limit in [1, 10, 40] {
                    let (hits, stats) = index.search_with_stats(query, &spec.filter(), limit)?;
                    let expected = brute_force(&docs, query, spec, limit);
                    assert_eq!(
                        keyed(&hits),
                        expected,
                        "limit {limit}, parallel from {parallel_search_min_docs}"
                    );
                    assert_eq!(stats.num_segments_exact, 6);
                }
            }
        }
    }
    Ok(())
}

#[test]
fn graph_recall_at_10_against_exact_search() -> Result<()> {
    let dims = MINILM_DIMS;
    let num_docs = 5_000;
    let mut rng = Rng(7);
    let clustered = Clustered::new(&mut rng, dims, 40);
    let temp = temp_dir();
    let config = VectorConfig {
        exact_scan_max_docs: 0,
        ..VectorConfig::new(dims)
    };
    let mut index = VectorIndex::open(temp.path(), config)?;
    let mut docs = Vec::with_capacity(num_docs);
    for i in 0..num_docs {
        let mut doc = doc(
            ["a", "b"][i % 2],
            DocType::Event,
            &format!("d{i}"),
            clustered.sample(&mut rng),
        );
        doc.session_id = Some(format!("s{}", i % 100));
        index.upsert(doc.clone())?;
        docs.push(doc);
    }
    let job = index.prepare_seal_forced().expect("a job");
    let started = Instant::now();
    let built = job.build()?;
    let build_duration = started.elapsed();
    let started = Instant::now();
    index.install(built)?;
    let install_duration = started.elapsed();
    let queries: Vec<Vec<f32>> = (0..100).map(|_| clustered.sample(&mut rng)).collect();

    // Half the segment matches the project: searched through the graph, post-filtered.
    let spec = FilterSpec::new("a");
    let mut num_found = 0;
    let mut graph_duration = Duration::ZERO;
    for query in &queries {
        let started = Instant::now();
        let (hits, stats) = index.search_with_stats(query, &spec.filter(), 10)?;
        graph_duration += started.elapsed();
        assert_eq!(
            (stats.num_segments_graph, stats.num_graph_fallbacks),
            (1, 0)
        );
        assert_eq!(hits.len(), 10);
        let exact = brute_force(&docs, query, &spec, 10);
        num_found += hits
            .iter()
            .filter(|hit| exact.iter().any(|(key, _)| *key == hit.key()))
            .count();
    }
    let recall = num_found as f64 / (10 * queries.len()) as f64;

    // One session is 1% of the segment: the graph's candidates hold too few, so the
    // segment is scanned exactly after all and the result is exact.
    let selective = FilterSpec {
        session_id_opt: Some("s42"),
        ..FilterSpec::new("a")
    };
    for query in queries.iter().take(10) {
        let (hits, stats) = index.search_with_stats(query, &selective.filter(), 10)?;
        assert_eq!(stats.num_graph_fallbacks, 1);
        assert_eq!(keyed(&hits), brute_force(&docs, query, &selective, 10));
    }

    // The same searches, exact.
    index.config.exact_scan_max_docs = usize::MAX;
    let started = Instant::now();
    for query in &queries {
        index.search(query, &spec.filter(), 10)?;
    }
    let exact_duration = started.elapsed();
    eprintln!(
        "{num_docs} x {dims}: build {build_duration:?}, install {install_duration:?}, \
         recall@10 {recall:.3}, per query: graph {:?}, exact scan of {} docs {:?}",
        graph_duration / queries.len() as u32,
        num_docs / 2,
        exact_duration / queries.len() as u32,
    );
    assert!(recall >= 0.95, "recall@10 {recall}");
    Ok(())
}

#[test]
fn sealed_documents_are_found_replaced_and_deleted() -> Result<()> {
    let temp = temp_dir();
    let mut index = VectorIndex::open(temp.path(), small_config(2))?;
    index.upsert(event("a", vec![1.0, 0.0]))?;
    index.upsert(event("b", vec![0.0, 1.0]))?;
    index.upsert(event("c", vec![-1.0, 0.0]))?;
    assert!(index.prepare_seal().is_none(), "below the threshold");
    let outcome = index.seal_now(true)?.expect("sealed");
    assert_eq!((outcome.num_docs, outcome.num_superseded), (3, 0));
    let status = index.status();
    assert_eq!((status.num_buffered, status.segments.len()), (0, 1));
    let filter = DocSelector::in_project("p");
    assert_eq!(ids(&index.search(&[1.0, 0.1], &filter, 1)?), ["a"]);

    // An upsert replaces the sealed copy: only the new version is ever returned.
    index.upsert(event("a", vec![0.0, -1.0]))?;
    let hits = index.search(&[1.0, 0.5], &filter, 10)?;
    assert_eq!(ids(&hits), ["b", "a", "c"]);
    assert!(
        (hits[1].score + 0.5 / 1.25f32.sqrt()).abs() < 1e-6,
        "the new vector's score"
    );
    assert_eq!(index.status().num_tombstones, 1);

    // A delete hides a sealed document.
    assert!(index.delete(&DocKey::new("p", DocType::Event, "b")));
    assert!(!index.delete(&DocKey::new("p", DocType::Event, "b")));
    assert_eq!(ids(&index.search(&[1.0, 0.0], &filter, 10)?), ["a", "c"]);
    assert_eq!(index.num_docs(), 2);
    // Keys are per project and type.
    assert!(!index.delete(&DocKey::new("p", DocType::Grip, "a")));
    assert!(!index.delete(&DocKey::new("q", DocType::Event, "a")));
    let status = index.status();
    assert_eq!(
        (status.num_docs, status.num_buffered, status.num_tombstones),
        (2, 1, 2)
    );
    Ok(())
}

#[test]
fn merges_keep_exactly_the_live_documents() -> Result<()> {
    let dims = 4;
    let mut rng = Rng(3);
    let temp = temp_dir();
    let mut index = VectorIndex::open(temp.path(), small_config(dims))?;
    let mut live: BTreeMap<String, VectorDoc> = BTreeMap::new();
    for round in 0..4 {
        for i in 0..4 {
            let doc = event(&format!("r{round}-{i}"), rng.gaussian_vector(dims, 1.0));
            index.upsert(doc.clone())?;
            live.insert(doc.doc_id.clone(), doc);
        }
        assert!(index.seal_now(false)?.is_some());
    }
    assert_eq!(index.status().segments.len(), 4);
    // Tombstones in sealed segments: a delete and an upsert.
    assert!(index.delete(&DocKey::new("p", DocType::Event, "r0-1")));
    live.remove("r0-1");
    let replaced = event("r2-3", rng.gaussian_vector(dims, 1.0));
    index.upsert(replaced.clone())?;
    live.insert("r2-3".to_owned(), replaced);
    index.commit("before merge")?;
    let files_before = segment_files(temp.path());
    assert_eq!(files_before.len(), 4);

    // 4 segments of 4 docs, seal threshold 4, factor 2: pairs in tier 0, merged twice,
    // then the two merged ones (tier 1) once more.
    let num_merges = index.merge_now()?;
    assert_eq!(num_merges, 3);
    let status = index.status();
    assert_eq!(status.segments.len(), 1);
    assert_eq!(status.num_tombstones, 0, "merges drop tombstones");
    assert_eq!(status.segments[0].num_docs, 14, "16 sealed, 2 superseded");
    assert_eq!(status.num_docs, 15, "14 sealed + the replaced one buffered");
    let everything = FilterSpec::new("p");
    for _ in 0..5 {
        let query = rng.gaussian_vector(dims, 1.0);
        let hits = index.search(&query, &everything.filter(), 100)?;
        assert_eq!(
            keyed(&hits),
            brute_force(live.values(), &query, &everything, 100)
        );
    }
    // Merged-away files stay until a commit no longer names them.
    assert_eq!(segment_files(temp.path()).len(), 4 + 3);
    index.commit("after merge")?;
    assert_eq!(segment_files(temp.path()).len(), 1);
    // The live keys, sealed and buffered, are exactly the live documents, also as a
    // reopened index reads them from its commit.
    let expected: BTreeSet<DocKey> = live.values().map(VectorDoc::key).collect();
    assert_eq!(index.doc_keys().cloned().collect::<BTreeSet<_>>(), expected);
    let reopened = VectorIndex::open(temp.path(), small_config(dims))?;
    assert_eq!(
        reopened.doc_keys().cloned().collect::<BTreeSet<_>>(),
        expected
    );
    Ok(())
}

/// A lifecycle prune leaves tombstones in the segments it reaches. A segment at least
/// half deleted is compacted on its own — the next merge rewrites it with only its live
/// documents — while one less deleted keeps its tombstones (never returned) until a
/// size-tier merge.
#[test]
fn a_half_deleted_segment_is_compacted_without_its_tombstones() -> Result<()> {
    let temp = temp_dir();
    let mut index = VectorIndex::open(temp.path(), small_config(2))?;
    for i in 0..8u16 {
        let mut old = event(&format!("e{i}"), vec![1.0, f32::from(i)]);
        old.timestamp_ms = u64::from(i);
        index.upsert(old)?;
    }
    index.seal_now(true)?;
    index.commit("sealed")?;
    assert_eq!(index.status().segments.len(), 1);

    assert_eq!(
        index.delete_matching(&DocSelector::new(DocType::Event).before_ms(3)),
        3
    );
    assert_eq!(index.status().num_tombstones, 3);
    assert!(index.prepare_merge().is_none(), "3 of 8 deleted: kept");
    let filter = DocSelector::in_project("p");
    assert_eq!(index.search(&[1.0, 0.0], &filter, 10)?.len(), 5);

    assert_eq!(
        index.delete_matching(&DocSelector::new(DocType::Event).before_ms(4)),
        1
    );
    assert_eq!(index.merge_now()?, 1, "4 of 8 deleted: compacted");
    let status = index.status();
    assert_eq!(status.num_tombstones, 0);
    assert_eq!(status.segments.len(), 1);
    assert_eq!(status.segments[0].num_docs, 4);
    let mut found = ids(&index.search(&[1.0, 0.0], &filter, 10)?)
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    found.sort();
    assert_eq!(found, ["e4", "e5", "e6", "e7"]);
    index.commit("compacted")?;
    assert_eq!(
        segment_files(temp.path()).len(),
        1,
        "the old file is removed"
    );
    drop(index);
    let reopened = VectorIndex::open(temp.path(), small_config(2))?;
    let status = reopened.status();
    assert_eq!((status.num_docs, status.num_tombstones), (4, 0));
    Ok(())
}

fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| format::parse_segment_file_name(name).is_some())
        .collect();
    names.sort();
    names
}

#[test]
fn install_keeps_what_changed_while_the_job_was_building() -> Result<()> {
    let temp = temp_dir();
    let mut index = VectorIndex::open(temp.path(), small_config(2))?;
    for (doc_id, vector) in [
        ("a", [1.0, 0.0]),
        ("b", [0.0, 1.0]),
        ("c", [-1.0, 0.0]),
        ("d", [0.0, -1.0]),
    ] {
        index.upsert(event(doc_id, vector.to_vec()))?;
    }
    let job = index.prepare_seal().expect("at the threshold");
    assert_eq!(job.num_docs(), 4);
    // While it builds: a is upserted again, b deleted, e added, c deleted and re-added.
    index.upsert(event("a", vec![0.0, 1.0]))?;
    index.delete(&DocKey::new("p", DocType::Event, "b"));
    index.upsert(event("e", vec![1.0, 1.0]))?;
    index.delete(&DocKey::new("p", DocType::Event, "c"));
    index.upsert(event("c", vec![-1.0, 0.0]))?;
    let outcome = index.install(job.build()?)?;
    assert_eq!(
        (outcome.num_docs, outcome.num_superseded),
        (1, 3),
        "only d was unchanged"
    );
    let status = index.status();
    assert_eq!(
        (status.num_docs, status.num_buffered, status.num_tombstones),
        (4, 3, 3)
    );
    let hits = index.search(&[0.0, 1.0], &DocSelector::in_project("p"), 10)?;
    assert_eq!(ids(&hits), ["a", "e", "c", "d"]);
    assert!((hits[0].score - 1.0).abs() < 1e-6, "a is the new version");

    // A merge racing with a delete and an upsert of its inputs' documents.
    index.seal_now(true)?;
    assert_eq!(index.status().segments.len(), 2);
    let merge = index.prepare_merge().expect("two segments in tier 0");
    assert_eq!(merge.num_docs(), 4);
    index.delete(&DocKey::new("p", DocType::Event, "d"));
    index.upsert(event("e", vec![-1.0, -1.0]))?;
    let outcome = index.install(merge.build()?)?;
    assert_eq!(
        (
            outcome.num_docs,
            outcome.num_superseded,
            outcome.num_segments_removed
        ),
        (2, 2, 2)
    );
    let hits = index.search(&[0.0, 1.0], &DocSelector::in_project("p"), 10)?;
    assert_eq!(ids(&hits), ["a", "c", "e"]);
    assert_eq!(index.num_docs(), 3);

    // A seal whose every document changed installs nothing.
    let job = index.prepare_seal_forced().expect("e is buffered");
    index.delete(&DocKey::new("p", DocType::Event, "e"));
    let outcome = index.install(job.build()?)?;
    assert_eq!((outcome.segment_id_opt, outcome.num_superseded), (None, 1));
    assert_eq!(
        segment_files(temp.path()).len(),
        3,
        "two merged away, not yet committed"
    );
    Ok(())
}

#[test]
fn persisted_segments_are_adopted_or_their_files_removed() -> Result<()> {
    let temp = temp_dir();
    let mut index = VectorIndex::open(temp.path(), small_config(2))?;
    index.upsert(event("a", vec![1.0, 0.0]))?;
    // Persisted ahead of the install, outside any lock: install adopts the file.
    let mut built = index.prepare_seal_forced().expect("a job").build()?;
    built.persist()?;
    built.persist()?;
    assert_eq!(segment_files(temp.path()).len(), 1);
    let size_bytes = built.size_bytes();
    let outcome = index.install(built)?;
    assert_eq!(outcome.num_docs, 1);
    assert_eq!(segment_files(temp.path()).len(), 1);
    assert_eq!(index.status().segments[0].size_bytes, size_bytes);

    // Persisted and dropped (a shutdown): the file goes with it.
    index.upsert(event("b", vec![0.0, 1.0]))?;
    let mut built = index.prepare_seal_forced().expect("a job").build()?;
    built.persist()?;
    assert_eq!(segment_files(temp.path()).len(), 2);
    drop(built);
    assert_eq!(segment_files(temp.path()).len(), 1);

    // Persisted, then every document superseded: nothing installed, file removed.
    let mut built = index.prepare_seal_forced().expect("a job").build()?;
    built.persist()?;
    index.upsert(event("b", vec![1.0, 1.0]))?;
    let outcome = index.install(built)?;
    assert_eq!(outcome.segment_id_opt, None);
    assert_eq!(segment_files(temp.path()).len(), 1);

    // Persisted, then stale: refused, file removed.
    let mut built = index.prepare_seal_forced().expect("a job").build()?;
    built.persist()?;
    index.clear();
    assert!(matches!(
        index.install(built),
        Err(VectorError::StaleJob(_))
    ));
    assert_eq!(
        segment_files(temp.path()).len(),
        1,
        "the cleared segment until a commit"
    );
    index.commit("1")?;
    assert!(segment_files(temp.path()).is_empty());
    Ok(())
}

#[test]
fn jobs_are_exclusive_until_dropped_and_stale_ones_are_refused() -> Result<()> {
    let temp = temp_dir();
    let mut index = VectorIndex::open(temp.path(), small_config(2))?;
    index.upsert(event("a", vec![1.0, 0.0]))?;
    let job = index.prepare_seal_forced().expect("a job");
    assert!(index.prepare_seal_forced().is_none(), "one seal at a time");
    assert!(index.status().seal_in_flight);
    drop(job);
    let built = index.prepare_seal_forced().expect("released").build()?;
    assert!(
        index.prepare_seal_forced().is_none(),
        "the built segment holds it"
    );
    index.install(built)?;
    index.upsert(event("b", vec![0.0, 1.0]))?;
    index.seal_now(true)?;

    let merge = index.prepare_merge().expect("two segments");
    assert!(
        index.prepare_merge().is_none(),
        "inputs are not offered twice"
    );
    assert!(
        index
            .status()
            .segments
            .iter()
            .all(|segment| segment.merging)
    );
    drop(merge);
    let merge = index.prepare_merge().expect("released");

    // After clear, earlier jobs are stale and change nothing.
    index.upsert(event("c", vec![1.0, 1.0]))?;
    let seal = index.prepare_seal_forced().expect("a job");
    index.clear();
    assert!(matches!(
        index.install(merge.build()?),
        Err(VectorError::StaleJob(_))
    ));
    assert!(matches!(
        index.install(seal.build()?),
        Err(VectorError::StaleJob(_))
    ));
    assert_eq!(index.num_docs(), 0);

    // A job of another index is stale too.
    let other_dir = temp_dir();
    let mut other = VectorIndex::open(other_dir.path(), small_config(2))?;
    other.upsert(event("x", vec![1.0, 0.0]))?;
    let foreign = other.prepare_seal_forced().expect("a job").build()?;
    assert!(matches!(
        index.install(foreign),
        Err(VectorError::StaleJob(_))
    ));
    Ok(())
}

#[test]
fn delete_matching_counts_and_removes_in_buffer_and_segments() -> Result<()> {
    let dims = 4;
    let mut rng = Rng(5);
    let docs = filter_corpus(&mut rng, dims);
    let temp = temp_dir();
    let mut index = VectorIndex::open(temp.path(), small_config(dims))?;
    for doc in docs.iter().take(80) {
        index.upsert(doc.clone())?;
    }
    index.seal_now(true)?;
    for doc in docs.iter().skip(80) {
        index.upsert(doc.clone())?;
    }
    let mut live: Vec<VectorDoc> = docs.clone();
    let mut prune =
        |index: &mut VectorIndex, selector: DocSelector, keep: &dyn Fn(&VectorDoc) -> bool| {
            let expected = live.iter().filter(|doc| !keep(doc)).count() as u64;
            assert!(expected > 0);
            assert_eq!(index.delete_matching(&selector), expected);
            assert_eq!(index.delete_matching(&selector), 0, "nothing left to match");
            live.retain(|doc| keep(doc));
            assert_eq!(index.num_docs(), live.len());
        };
    prune(
        &mut index,
        DocSelector::new(DocType::Event).before_ms(1_500),
        &|doc| !(doc.doc_type == DocType::Event && doc.timestamp_ms < 1_500),
    );
    prune(
        &mut index,
        DocSelector::new(DocType::TocNode)
            .level("segment")
            .project_id("alpha"),
        &|doc| {
            !(doc.doc_type == DocType::TocNode
                && doc.level.as_deref() == Some("segment")
                && doc.project_id == "alpha")
        },
    );
    prune(
        &mut index,
        DocSelector::new(DocType::Grip).project_id("beta"),
        &|doc| !(doc.doc_type == DocType::Grip && doc.project_id == "beta"),
    );
    for project_id in ["alpha", "beta"] {
        let spec = FilterSpec::new(project_id);
        let query = rng.gaussian_vector(dims, 1.0);
        assert_eq!(
            keyed(&index.search(&query, &spec.filter(), 200)?),
            brute_force(&live, &query, &spec, 200)
        );
    }
    Ok(())
}

#[test]
fn commit_and_reopen_round_trip() -> Result<()> {
    let dims = 4;
    let mut rng = Rng(9);
    let docs = filter_corpus(&mut rng, dims);
    let temp = temp_dir();
    let config = small_config(dims);
    let mut index = VectorIndex::open(temp.path(), config.clone())?;
    assert_eq!(index.last_payload(), None);
    assert!(!index.has_uncommitted_changes());
    for doc in docs.iter().take(60) {
        index.upsert(doc.clone())?;
    }
    index.seal_now(true)?;
    for doc in docs.iter().skip(60).take(40) {
        index.upsert(doc.clone())?;
    }
    index.seal_now(true)?;
    for doc in docs.iter().skip(100) {
        index.upsert(doc.clone())?;
    }
    index.delete(&DocKey::new("alpha", DocType::Grip, "d1"));
    index.upsert(VectorDoc {
        doc_id: "d2".to_owned(),
        ..docs[2].clone()
    })?;
    assert!(index.has_uncommitted_changes());
    index.commit("{\"cursor\":42}")?;
    assert!(!index.has_uncommitted_changes());
    let status = index.status();
    assert_eq!(status.last_payload.as_deref(), Some("{\"cursor\":42}"));
    assert_eq!(status.segments.len(), 2);
    assert_eq!(status.num_tombstones, 2);
    assert!(status.size_bytes > 0);
    let queries: Vec<Vec<f32>> = (0..3).map(|_| rng.gaussian_vector(dims, 1.0)).collect();
    let results = |index: &VectorIndex| -> Result<Vec<Vec<VectorHit>>> {
        let mut all = Vec::new();
        for spec in filter_specs() {
            for query in &queries {
                all.push(index.search(query, &spec.filter(), 50)?);
            }
        }
        Ok(all)
    };
    let before = results(&index)?;
    drop(index);

    let reopened = VectorIndex::open(temp.path(), config.clone())?;
    assert_eq!(reopened.last_payload(), Some("{\"cursor\":42}"));
    assert_eq!(reopened.status(), status);
    assert_eq!(results(&reopened)?, before);
    drop(reopened);

    // A second commit after more changes, then reopen again.
    let mut index = VectorIndex::open(temp.path(), config.clone())?;
    index.merge_now()?;
    index.delete(&DocKey::new("beta", DocType::TocNode, "d0"));
    index.commit("43")?;
    let status = index.status();
    let before = results(&index)?;
    drop(index);
    let reopened = VectorIndex::open(temp.path(), config)?;
    assert_eq!(reopened.last_payload(), Some("43"));
    assert_eq!(reopened.status(), status);
    assert_eq!(results(&reopened)?, before);
    Ok(())
}

#[test]
fn uncommitted_changes_are_lost_and_their_files_removed() -> Result<()> {
    let temp = temp_dir();
    let config = small_config(2);
    let mut index = VectorIndex::open(temp.path(), config.clone())?;
    index.upsert(event("a", vec![1.0, 0.0]))?;
    index.commit("1")?;
    index.upsert(event("b", vec![0.0, 1.0]))?;
    index.seal_now(true)?;
    assert_eq!(segment_files(temp.path()).len(), 1);
    drop(index); // a crash before the commit

    let index = VectorIndex::open(temp.path(), config)?;
    assert_eq!(index.last_payload(), Some("1"));
    assert_eq!(index.num_docs(), 1);
    assert!(index.contains(&DocKey::new("p", DocType::Event, "a")));
    assert!(index.status().segments.is_empty());
    assert!(
        segment_files(temp.path()).is_empty(),
        "the unnamed segment file is removed"
    );
    Ok(())
}

#[test]
fn open_removes_leftovers_and_keeps_other_files() -> Result<()> {
    let temp = temp_dir();
    let config = small_config(2);
    let mut index = VectorIndex::open(temp.path(), config.clone())?;
    index.upsert(event("a", vec![1.0, 0.0]))?;
    index.seal_now(true)?;
    index.commit("1")?;
    let named = segment_files(temp.path());
    drop(index);
    for leftover in [MANIFEST_TMP_FILE, "seg-00000000000000000099.vseg"] {
        fs::write(temp.path().join(leftover), b"half written").expect("write");
    }
    fs::write(temp.path().join("README"), b"not ours").expect("write");
    let index = VectorIndex::open(temp.path(), config)?;
    assert_eq!(index.num_docs(), 1);
    assert_eq!(segment_files(temp.path()), named);
    assert!(!temp.path().join(MANIFEST_TMP_FILE).exists());
    assert!(temp.path().join("README").exists());
    Ok(())
}

#[test]
fn damaged_directories_are_precise_errors() -> Result<()> {
    let temp = temp_dir();
    let config = small_config(2);
    let mut index = VectorIndex::open(temp.path(), config.clone())?;
    index.upsert(event("a", vec![1.0, 0.0]))?;
    index.seal_now(true)?;
    index.upsert(event("b", vec![0.0, 1.0]))?;
    index.seal_now(true)?;
    index.commit("1")?;
    drop(index);
    let files = segment_files(temp.path());
    let [first, second] = files.as_slice() else {
        panic!("two segment files: {files:?}");
    };
    let first_path = temp.path().join(first);
    let second_path = temp.path().join(second);
    let manifest_path = temp.path().join(MANIFEST_FILE);
    let first_bytes = fs::read(&first_path).expect("read");
    let manifest_bytes = fs::read(&manifest_path).expect("read");
    let open = || VectorIndex::open(temp.path(), config.clone());
    let restore = || {
        fs::write(&first_path, &first_bytes).expect("write");
        fs::write(&manifest_path, &manifest_bytes).expect("write");
    };

    // Other dimensions.
    assert!(matches!(
        VectorIndex::open(temp.path(), small_config(3)),
        Err(VectorError::IndexDimensions {
            on_disk: 2,
            configured: 3,
            ..
        })
    ));
    // A flipped bit in a segment.
    let mut flipped = first_bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    fs::write(&first_path, &flipped).expect("write");
    assert!(matches!(open(), Err(VectorError::Corrupt { .. })));
    // A valid segment file in the wrong place.
    fs::copy(&second_path, &first_path).expect("copy");
    assert!(matches!(open(), Err(VectorError::Corrupt { .. })));
    restore();
    // A future format version of the manifest.
    let mut future = manifest_bytes.clone();
    future[8..12].copy_from_slice(&2u32.to_le_bytes());
    fs::write(&manifest_path, &future).expect("write");
    assert!(matches!(
        open(),
        Err(VectorError::UnsupportedFormatVersion {
            found: 2,
            supported: 1,
            ..
        })
    ));
    // A truncated manifest.
    fs::write(&manifest_path, &manifest_bytes[..manifest_bytes.len() - 3]).expect("write");
    assert!(matches!(open(), Err(VectorError::Corrupt { .. })));
    restore();
    // A segment file the manifest names is gone. It is an error, and nothing is removed.
    fs::remove_file(&first_path).expect("remove");
    assert!(matches!(open(), Err(VectorError::MissingSegment { .. })));
    assert!(second_path.exists());
    restore();
    assert_eq!(open()?.num_docs(), 2);
    Ok(())
}

#[test]
fn clear_and_destroy_start_over() -> Result<()> {
    let temp = temp_dir();
    let dir = temp.path().join("vectors");
    let config = small_config(2);
    let mut index = VectorIndex::open(&dir, config.clone())?;
    index.upsert(event("a", vec![1.0, 0.0]))?;
    index.seal_now(true)?;
    index.upsert(event("b", vec![0.0, 1.0]))?;
    index.commit("1")?;
    index.clear();
    assert_eq!(index.num_docs(), 0);
    assert!(
        index
            .search(&[1.0, 0.0], &DocSelector::in_project("p"), 10)?
            .is_empty()
    );
    index.upsert(event("c", vec![1.0, 1.0]))?;
    index.commit("2")?;
    assert!(segment_files(&dir).is_empty());
    drop(index);
    let index = VectorIndex::open(&dir, config.clone())?;
    assert_eq!(index.num_docs(), 1);
    drop(index);
    VectorIndex::destroy(&dir)?;
    assert!(!dir.exists());
    VectorIndex::destroy(&dir)?;
    let index = VectorIndex::open(&dir, config)?;
    assert_eq!((index.num_docs(), index.last_payload()), (0, None));
    Ok(())
}

#[test]
fn status_counts_types_tiers_and_bytes() -> Result<()> {
    let temp = temp_dir();
    let mut index = VectorIndex::open(temp.path(), small_config(2))?;
    for (i, doc_type) in DocType::ALL.into_iter().enumerate() {
        for j in 0..=i {
            index.upsert(doc("p", doc_type, &format!("{i}-{j}"), vec![1.0, j as f32]))?;
        }
    }
    index.seal_now(true)?;
    index.upsert(doc("q", DocType::Idea, "x", vec![1.0, 0.0]))?;
    index.delete(&DocKey::new("p", DocType::Event, "2-0"));
    index.commit("1")?;
    let status = index.status();
    assert_eq!(
        status.doc_counts,
        DocCounts {
            num_toc_nodes: 1,
            num_grips: 2,
            num_events: 2,
            num_ideas: 5,
        }
    );
    assert_eq!(
        (status.num_docs, status.num_buffered, status.num_tombstones),
        (10, 1, 1)
    );
    assert_eq!(status.segments.len(), 1);
    let segment = &status.segments[0];
    assert_eq!(
        (segment.num_docs, segment.num_deleted, segment.tier),
        (10, 1, 1)
    );
    let on_disk: u64 = fs::read_dir(temp.path())
        .expect("read dir")
        .map(|entry| entry.expect("entry").metadata().expect("metadata").len())
        .sum();
    assert_eq!(status.size_bytes, on_disk);
    assert_eq!(index.tier(3), 0);
    assert_eq!(index.tier(8), 1);
    assert_eq!(index.tier(16), 2);
    assert_eq!(index.tier(usize::MAX), 64);
    Ok(())
}

#[test]
fn config_is_validated() {
    let temp = temp_dir();
    for bad in [
        VectorConfig::new(0),
        VectorConfig {
            merge_factor: 1,
            ..VectorConfig::new(4)
        },
        VectorConfig {
            seal_threshold: 0,
            ..VectorConfig::new(4)
        },
        VectorConfig {
            ef_search: 0,
            ..VectorConfig::new(4)
        },
    ] {
        assert!(matches!(
            VectorIndex::open(temp.path(), bad),
            Err(VectorError::InvalidConfig(_))
        ));
    }
    assert!(VectorConfig::default().validate().is_ok());
}

#[test]
fn the_index_and_jobs_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<VectorIndex>();
    send::<SealJob>();
    send::<MergeJob>();
    send::<BuiltSegment>();
    send_sync::<VectorError>();
}

/// A random walk of writes, seals and merges (installed late, racing with writes),
/// commits, crashes and clears, checked after each step against a map of the live
/// documents: exact searches must equal brute force; graph searches must return only
/// live, matching documents with their true scores, `min(limit, matches)` of them.
#[test]
fn random_operations_match_a_model() -> Result<()> {
    let dims = 6;
    for seed in 0..12 {
        let mut rng = Rng(1_000 + seed);
        let temp = temp_dir();
        let config = VectorConfig {
            seal_threshold: 3,
            merge_factor: 2,
            ef_construction: 16,
            ef_search: 200,
            exact_scan_max_docs: usize::MAX,
            ..VectorConfig::new(dims)
        };
        let mut index = VectorIndex::open(temp.path(), config.clone())?;
        let mut model: BTreeMap<DocKey, VectorDoc> = BTreeMap::new();
        let mut committed: BTreeMap<DocKey, VectorDoc> = BTreeMap::new();
        let mut pending_seal: Option<SealJob> = None;
        let mut pending_merge: Option<MergeJob> = None;
        for step in 0..250 {
            let context = format!("seed {seed} step {step}");
            match rng.below(100) {
                0..=44 => {
                    let doc = VectorDoc {
                        doc_type: DocType::ALL[rng.below(2)],
                        doc_id: format!("d{}", rng.below(15)),
                        project_id: ["a", "b"][rng.below(2)].to_owned(),
                        session_id: (rng.below(2) == 0).then(|| "s".to_owned()),
                        level: None,
                        timestamp_ms: rng.below(10) as u64,
                        vector: rng.gaussian_vector(dims, 1.0),
                    };
                    index.upsert(doc.clone())?;
                    model.insert(doc.key(), doc);
                }
                45..=59 => {
                    let key = DocKey::new(
                        ["a", "b"][rng.below(2)],
                        DocType::ALL[rng.below(2)],
                        format!("d{}", rng.below(15)),
                    );
                    assert_eq!(
                        index.delete(&key),
                        model.remove(&key).is_some(),
                        "{context}"
                    );
                }
                60..=61 => {
                    let selector = DocSelector::new(DocType::Grip).before_ms(3).project_id("a");
                    let before = model.len();
                    model.retain(|key, doc| {
                        !(key.doc_type == DocType::Grip
                            && key.project_id == "a"
                            && doc.timestamp_ms < 3)
                    });
                    let expected = (before - model.len()) as u64;
                    assert_eq!(index.delete_matching(&selector), expected, "{context}");
                }
                62..=69 => match pending_seal.take() {
                    Some(job) => {
                        index.install(job.build()?)?;
                    }
                    None => pending_seal = index.prepare_seal(),
                },
                70..=77 => match pending_merge.take() {
                    Some(job) => {
                        index.install(job.build()?)?;
                    }
                    None => pending_merge = index.prepare_merge(),
                },
                78..=89 => {
                    index.commit(&format!("{step}"))?;
                    committed = model.clone();
                }
                90..=96 => {
                    // A crash: jobs are lost, the last commit comes back.
                    pending_seal = None;
                    pending_merge = None;
                    drop(index);
                    index = VectorIndex::open(temp.path(), config.clone())?;
                    model = committed.clone();
                }
                _ => {
                    index.clear();
                    model.clear();
                    if let Some(job) = pending_seal.take() {
                        assert!(matches!(
                            index.install(job.build()?),
                            Err(VectorError::StaleJob(_))
                        ));
                    }
                }
            }
            check_against_model(&mut index, &model, &mut rng, &context)?;
        }
    }
    Ok(())
}

fn check_against_model(
    index: &mut VectorIndex,
    model: &BTreeMap<DocKey, VectorDoc>,
    rng: &mut Rng,
    context: &str,
) -> Result<()> {
    let dims = index.config.dims;
    assert_eq!(index.num_docs(), model.len(), "{context}");
    assert_eq!(index.status().num_docs, model.len() as u64, "{context}");
    let query = rng.gaussian_vector(dims, 1.0);
    let spec = match rng.below(3) {
        0 => FilterSpec::new(["a", "b"][rng.below(2)]),
        1 => FilterSpec {
            doc_types_opt: Some(vec![DocType::Grip]),
            ..FilterSpec::new("a")
        },
        _ => FilterSpec {
            session_id_opt: Some("s"),
            to_ms_opt: Some(5),
            ..FilterSpec::new("b")
        },
    };
    let limit = 1 + rng.below(6);
    let expected = brute_force(model.values(), &query, &spec, limit);
    let exact = index.search(&query, &spec.filter(), limit)?;
    assert_eq!(keyed(&exact), expected, "{context}");

    // Through the graphs wherever the over-fetch allows.
    index.config.exact_scan_max_docs = 0;
    let through_graphs = index.search(&query, &spec.filter(), limit);
    index.config.exact_scan_max_docs = usize::MAX;
    let through_graphs = through_graphs?;
    let num_matching = model.values().filter(|doc| spec.admits(doc)).count();
    assert_eq!(through_graphs.len(), limit.min(num_matching), "{context}");
    let all_scores = brute_force(model.values(), &query, &spec, usize::MAX);
    for hit in &through_graphs {
        let (_, score) = all_scores
            .iter()
            .find(|(key, _)| *key == hit.key())
            .unwrap_or_else(|| panic!("{context}: {hit:?} is not a live matching document"));
        assert_eq!(hit.score, *score, "{context}");
    }
    Ok(())
}

/// The v1 fixture: a directory written by this crate's first format, checked in. If
/// this test fails, the format changed: bump `FORMAT_VERSION` and keep reading v1, or
/// state that v1 indexes are rebuilt.
const FIXTURE_V1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/v1");

fn fixture_docs() -> Vec<VectorDoc> {
    let mut node = doc(
        "p",
        DocType::TocNode,
        "toc:day:2026-01-30",
        vec![0.0, 0.0, 1.0, 0.0],
    );
    node.level = Some("day".to_owned());
    node.timestamp_ms = 1_000;
    let mut grip = doc("p", DocType::Grip, "grip:1", vec![0.0, 0.0, 0.0, 2.0]);
    grip.session_id = Some("s1".to_owned());
    grip.timestamp_ms = 2_000;
    let mut e3 = event("e3", vec![0.0, 0.0, 1.0, 1.0]);
    e3.session_id = Some("s1".to_owned());
    e3.timestamp_ms = 3_000;
    vec![
        event("e1", vec![1.0, 0.0, 0.0, 0.0]),
        event("e2", vec![0.0, 1.0, 0.0, 0.0]),
        node,
        grip,
        doc("other", DocType::Idea, "i1", vec![1.0, 1.0, 0.0, 0.0]),
        e3,
    ]
}

/// Writes the v1 fixture. Run by hand, once per format version:
/// `cargo test -p memory-vector -- --ignored write_fixture_v1`.
#[test]
#[ignore = "writes the checked-in fixture"]
fn write_fixture_v1() -> Result<()> {
    let dir = Path::new(FIXTURE_V1);
    VectorIndex::destroy(dir)?;
    let mut index = VectorIndex::open(dir, small_config(4))?;
    let docs = fixture_docs();
    for doc in &docs[..3] {
        index.upsert(doc.clone())?;
    }
    index.seal_now(true)?;
    index.delete(&DocKey::new("p", DocType::Event, "e2"));
    index.upsert(docs[3].clone())?;
    index.seal_now(true)?;
    for doc in &docs[4..] {
        index.upsert(doc.clone())?;
    }
    index.commit("fixture-v1")
}

#[test]
fn reads_the_v1_fixture() -> Result<()> {
    let temp = temp_dir();
    for entry in fs::read_dir(FIXTURE_V1).expect("the fixture is checked in") {
        let entry = entry.expect("entry");
        fs::copy(entry.path(), temp.path().join(entry.file_name())).expect("copy");
    }
    let index = VectorIndex::open(temp.path(), small_config(4))?;
    assert_eq!(index.last_payload(), Some("fixture-v1"));
    let status = index.status();
    assert_eq!(
        (
            status.num_docs,
            status.num_buffered,
            status.num_tombstones,
            status.segments.len()
        ),
        (5, 2, 1, 2)
    );
    let mut live = fixture_docs();
    live.remove(1);
    for (spec, query) in [
        (FilterSpec::new("p"), [1.0, 0.0, 0.5, 0.0]),
        (FilterSpec::new("other"), [1.0, 0.0, 0.0, 0.0]),
        (
            FilterSpec {
                session_id_opt: Some("s1"),
                ..FilterSpec::new("p")
            },
            [0.0, 0.0, 0.0, 1.0],
        ),
        (
            FilterSpec {
                level_opt: Some("day"),
                from_ms_opt: Some(1_000),
                ..FilterSpec::new("p")
            },
            [0.0, 1.0, 0.0, 0.0],
        ),
    ] {
        let hits = index.search(&query, &spec.filter(), 10)?;
        assert!(!hits.is_empty());
        assert_eq!(keyed(&hits), brute_force(&live, &query, &spec, 10));
    }
    Ok(())
}
