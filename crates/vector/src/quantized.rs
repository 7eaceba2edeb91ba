//! [`QuantizedVectors`]: an int8 copy of a segment's vectors, one contiguous row per
//! document, for exact scans.
//!
//! An exact scan reads every candidate's vector. The f32 vectors live inside the graph
//! as separately boxed points (1 536 bytes each at 384 dimensions), so a scan of tens of
//! thousands of them is bound by memory: about 0.3–0.5 µs per vector on this project's
//! 2-core machine. An int8 row is a quarter of that and contiguous, so the scan streams.
//! Each row keeps its own scale (largest component / 127); a query is quantized the
//! same way, and the integer dot product times both scales approximates the cosine to
//! within about 1e-3 for unit vectors. The scan ranks by that approximation, then the
//! best [`rerank_count`] candidates are scored again with their f32 vectors, so the
//! results are the exact top `limit` unless more than that many documents fall within
//! the approximation error of the last one. The approximations of different segments
//! are on the same scale, so the candidates are the best of all the segments one search
//! thread scans, as if they were one (`VectorIndex::search_group`).
//!
//! The scan loop ([`QuantizedVectors::scan`]) is compiled twice: for baseline x86-64
//! (SSE2, which needs several instructions to widen int8 lanes) and with AVX2, chosen
//! at run time when the CPU has it. Both are the same safe code, so they give the same
//! integers; only the AVX2 copy prefetches rows ahead. That is the crate's one use of
//! `unsafe`: calling the AVX2 copy once the CPU is known to have it.
//!
//! The copy is derived, never stored: it is built when a segment is built or loaded.

/// Integer components are in `-127..=127`.
const LEVELS: f32 = 127.0;

/// Lanes of the integer dot product (the compiler keeps them in SIMD registers).
const LANES: usize = 16;

/// How far ahead of the row being scored a scan prefetches (8 rows: 3 KiB at 384
/// dimensions). A project's rows are contiguous, but a scan reads them faster than the
/// hardware prefetcher alone brings them in: at 100 000 documents, prefetching 4, 8 or
/// 16 rows ahead made searches about 20 % faster, with no clear winner among the three.
const PREFETCH_ROWS: usize = 8;

/// How many approximate candidates are scored again exactly for a search of `limit`.
#[must_use]
pub(crate) fn rerank_count(limit: usize) -> usize {
    limit.saturating_mul(8).max(64)
}

/// One vector in int8 with its scale: `vector ≈ codes × scale`.
#[derive(Debug)]
pub(crate) struct QuantizedQuery {
    codes: Vec<i8>,
    scale: f32,
}

impl QuantizedQuery {
    pub(crate) fn new(vector: &[f32]) -> Self {
        let mut codes = Vec::with_capacity(vector.len());
        let scale = quantize_into(vector, &mut codes);
        QuantizedQuery { codes, scale }
    }
}

/// Int8 rows of a segment's vectors, in the order its scans read them (each project's
/// documents together, see `crate::segment`).
#[derive(Debug)]
pub(crate) struct QuantizedVectors {
    dims: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
}

impl QuantizedVectors {
    /// The rows of `vectors` (each `dims` long), in order.
    pub(crate) fn new<'a>(dims: usize, vectors: impl ExactSizeIterator<Item = &'a [f32]>) -> Self {
        let mut codes = Vec::with_capacity(dims * vectors.len());
        let mut scales = Vec::with_capacity(vectors.len());
        for vector in vectors {
            debug_assert_eq!(vector.len(), dims);
            scales.push(quantize_into(vector, &mut codes));
        }
        QuantizedVectors {
            dims,
            codes,
            scales,
        }
    }

    /// Approximately `query · vector` of the vector of `row`. Inlined, so the kernel
    /// is compiled with the target features of the scan it is inlined into.
    #[inline(always)]
    pub(crate) fn score(&self, query: &QuantizedQuery, row: usize) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let dot = dot_i8(&query.codes, self.row(row)) as f32;
        dot * query.scale * self.scales[row]
    }

    /// Scores the rows from `first_row` on, one per local id of `local_ids`, for those
    /// `keep` keeps (given the local id), and hands each score to `found` with its local
    /// id; returns how many. This loop is the whole cost of an exact scan, so it is
    /// compiled twice: with AVX2, chosen at run time when the CPU has it, and portable
    /// (see the module docs).
    pub(crate) fn scan(
        &self,
        query: &QuantizedQuery,
        rows: RowRun<'_>,
        keep: impl FnMut(u32) -> bool,
        found: impl FnMut(f32, u32),
    ) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            // SAFETY: `scan_avx2` requires nothing but AVX2, which the CPU running this
            // process has: `has_avx2()` just said so.
            #[allow(unsafe_code)]
            return unsafe { scan_avx2(self, query, rows, keep, found) };
        }
        self.scan_with(query, rows, keep, found, |_| {})
    }

    /// The scan loop, inlined into each compiled copy (see [`QuantizedVectors::scan`]).
    /// `prefetch` is handed the row `PREFETCH_ROWS` ahead.
    #[inline(always)]
    fn scan_with(
        &self,
        query: &QuantizedQuery,
        RowRun {
            first_row,
            local_ids,
        }: RowRun<'_>,
        mut keep: impl FnMut(u32) -> bool,
        mut found: impl FnMut(f32, u32),
        prefetch: impl Fn(&[i8]),
    ) -> u64 {
        let rows = first_row..first_row + local_ids.len();
        let mut num_scored = 0;
        for (row, &local_id) in rows.clone().zip(local_ids) {
            if rows.contains(&(row + PREFETCH_ROWS)) {
                prefetch(self.row(row + PREFETCH_ROWS));
            }
            if !keep(local_id) {
                continue;
            }
            num_scored += 1;
            found(self.score(query, row), local_id);
        }
        num_scored
    }

    #[inline(always)]
    fn row(&self, row: usize) -> &[i8] {
        &self.codes[row * self.dims..(row + 1) * self.dims]
    }

    /// Bytes held.
    #[cfg(test)]
    pub(crate) fn size_bytes(&self) -> usize {
        self.codes.len() + self.scales.len() * std::mem::size_of::<f32>()
    }
}

/// Appends `vector` in int8 to `codes` and returns its scale.
fn quantize_into(vector: &[f32], codes: &mut Vec<i8>) -> f32 {
    let max_abs = vector
        .iter()
        .fold(0.0f32, |max, value| max.max(value.abs()));
    if max_abs == 0.0 {
        codes.extend(std::iter::repeat_n(0, vector.len()));
        return 0.0;
    }
    let scale = max_abs / LEVELS;
    #[allow(clippy::cast_possible_truncation)]
    codes.extend(
        vector
            .iter()
            .map(|value| (value / scale).round().clamp(-LEVELS, LEVELS) as i8),
    );
    scale
}

/// The rows one scan reads: consecutive from `first_row`, one per local id.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowRun<'a> {
    /// The row of `local_ids[0]`.
    pub(crate) first_row: usize,
    /// The documents of the rows, in row order.
    pub(crate) local_ids: &'a [u32],
}

/// The best `capacity` documents by approximate score: the candidates exact scans
/// score again with f32. `Id` names a document (a local id, or a segment and a local
/// id) and breaks ties.
pub(crate) struct ApproxTop<Id> {
    capacity: usize,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<Approx<Id>>>,
}

#[derive(Clone, Copy, Debug)]
struct Approx<Id> {
    score: f32,
    id: Id,
}

impl<Id: Ord> PartialEq for Approx<Id> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl<Id: Ord> Eq for Approx<Id> {}

impl<Id: Ord> PartialOrd for Approx<Id> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<Id: Ord> Ord for Approx<Id> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.id.cmp(&self.id))
    }
}

impl<Id: Ord> ApproxTop<Id> {
    pub(crate) fn new(capacity: usize) -> Self {
        ApproxTop {
            capacity,
            heap: std::collections::BinaryHeap::with_capacity(capacity + 1),
        }
    }

    /// Inlined into the scan loop: once the top is full, almost every candidate is
    /// turned away by one comparison.
    #[inline(always)]
    pub(crate) fn push(&mut self, score: f32, id: Id) {
        let candidate = Approx { score, id };
        let full = self.heap.len() >= self.capacity;
        if full
            && self
                .heap
                .peek()
                .is_none_or(|std::cmp::Reverse(worst)| candidate <= *worst)
        {
            return;
        }
        self.insert(candidate, full);
    }

    fn insert(&mut self, candidate: Approx<Id>, full: bool) {
        if full {
            self.heap.pop();
        }
        self.heap.push(std::cmp::Reverse(candidate));
    }

    /// The ids kept, in no particular order.
    pub(crate) fn into_ids(self) -> impl Iterator<Item = Id> {
        self.heap.into_iter().map(|std::cmp::Reverse(kept)| kept.id)
    }
}

/// Whether the CPU has AVX2, detected once.
#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    static HAS_AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS_AVX2.get_or_init(|| std::is_x86_feature_detected!("avx2"))
}

/// The portable scan loop compiled with AVX2: the same code, so the same results, with
/// eight int8 lanes widened and multiplied per instruction (`vpmovsxbd`, `vpmulld`;
/// SSE2 widens with unpacks and shifts). It also prefetches the rows ahead, which
/// `_mm_prefetch` may do safely here: this function has the feature it requires.
/// Scanning 29 000 rows of 384 dimensions held in cache took 0.9 ms against 1.3 ms
/// portable; in a search the rows come from memory, and the prefetches save as much
/// again.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scan_avx2(
    vectors: &QuantizedVectors,
    query: &QuantizedQuery,
    rows: RowRun<'_>,
    keep: impl FnMut(u32) -> bool,
    found: impl FnMut(f32, u32),
) -> u64 {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    vectors.scan_with(query, rows, keep, found, |row| {
        for offset in (0..row.len()).step_by(64) {
            _mm_prefetch::<_MM_HINT_T0>(row[offset..].as_ptr());
        }
    })
}

/// The integer dot product, in sixteen partial sums (exact: no overflow below 2^31 /
/// 127² ≈ 133 000 dimensions). Inlined, so the instructions are those of the caller's
/// target features.
#[inline(always)]
fn dot_i8(left: &[i8], right: &[i8]) -> i32 {
    debug_assert_eq!(left.len(), right.len());
    let (left_chunks, left_rest) = left.as_chunks::<LANES>();
    let (right_chunks, right_rest) = right.as_chunks::<LANES>();
    let mut sums = [0i32; LANES];
    for (left_chunk, right_chunk) in left_chunks.iter().zip(right_chunks) {
        for ((sum, left_value), right_value) in sums.iter_mut().zip(left_chunk).zip(right_chunk) {
            *sum += i32::from(*left_value) * i32::from(*right_value);
        }
    }
    let mut total: i32 = sums.iter().sum();
    for (left_value, right_value) in left_rest.iter().zip(right_rest) {
        total += i32::from(*left_value) * i32::from(*right_value);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::{dot, normalize};

    /// A deterministic unit vector.
    fn unit(seed: u64, dims: usize) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let raw: Vec<f32> = (0..dims)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                #[allow(clippy::cast_precision_loss)]
                let value = (state % 2001) as f32 / 1000.0 - 1.0;
                value
            })
            .collect();
        normalize(&raw, dims).expect("non-zero")
    }

    #[test]
    fn int8_scores_approximate_the_cosine() {
        let dims = 384;
        let vectors: Vec<Vec<f32>> = (0..50).map(|seed| unit(seed, dims)).collect();
        let rows = QuantizedVectors::new(dims, vectors.iter().map(Vec::as_slice));
        assert_eq!(rows.size_bytes(), 50 * (dims + 4));
        for seed in 100..110 {
            let query = unit(seed, dims);
            let quantized = QuantizedQuery::new(&query);
            for (local_id, vector) in vectors.iter().enumerate() {
                let exact = dot(&query, vector);
                let approx = rows.score(&quantized, local_id);
                assert!((exact - approx).abs() < 2e-3, "{exact} vs {approx}");
            }
        }
        // A vector against itself: about 1.
        let itself = rows.score(&QuantizedQuery::new(&vectors[7]), 7);
        assert!((itself - 1.0).abs() < 2e-3, "{itself}");
    }

    #[test]
    fn odd_lengths_and_zero_vectors() {
        let rows = QuantizedVectors::new(
            3,
            [[0.0f32, 0.0, 0.0].as_slice(), &[0.6, 0.0, 0.8]].into_iter(),
        );
        let query = QuantizedQuery::new(&[0.6, 0.0, 0.8]);
        assert_eq!(rows.score(&query, 0), 0.0);
        assert!((rows.score(&query, 1) - 1.0).abs() < 1e-2);
        assert_eq!(dot_i8(&[1; 37], &[-2; 37]), -74);
        assert_eq!(rerank_count(1), 64);
        assert_eq!(rerank_count(30), 240);
        let mut top = ApproxTop::new(2);
        for (score, local_id) in [(0.1, 1), (0.9, 2), (0.5, 3), (0.7, 4)] {
            top.push(score, local_id);
        }
        let mut kept: Vec<u32> = top.into_ids().collect();
        kept.sort_unstable();
        assert_eq!(kept, [2, 4]);
    }

    /// Rows of raw `codes` with scale 1, so a score is the integer dot product itself
    /// (exact in f32 below 2^24).
    fn raw_rows(dims: usize, codes: Vec<i8>) -> QuantizedVectors {
        let num_rows = codes.len() / dims;
        QuantizedVectors {
            dims,
            codes,
            scales: vec![1.0; num_rows],
        }
    }

    fn naive_dot_i8(left: &[i8], right: &[i8]) -> i64 {
        left.iter()
            .zip(right)
            .map(|(l, r)| i64::from(*l) * i64::from(*r))
            .sum()
    }

    /// Rows that stress the kernel: zeros, the extremes (127, -127 and -128, which the
    /// quantizer never writes but the kernel must still multiply exactly), alternating
    /// signs, and pseudo-random bytes over the whole range.
    fn stress_rows(dims: usize) -> Vec<Vec<i8>> {
        let mut state = 0x2545_F491_4F6C_DD1Du64 ^ dims as u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[3] as i8
        };
        let mut rows = vec![
            vec![0; dims],
            vec![127; dims],
            vec![-127; dims],
            vec![-128; dims],
            (0..dims)
                .map(|at| if at % 2 == 0 { 127 } else { -128 })
                .collect(),
            (0..dims).map(|at| [-128, 127, -1, 1, 0][at % 5]).collect(),
        ];
        rows.extend((0..6).map(|_| (0..dims).map(|_| random()).collect::<Vec<i8>>()));
        rows
    }

    /// On a CPU with AVX2 `scan` runs the AVX2 copy of the loop; `scan_with` is the
    /// portable copy. Both must give exactly the integer dot product, for every length
    /// (whole chunks of sixteen lanes, remainders, shorter than one chunk).
    #[test]
    fn the_avx2_and_portable_scans_give_the_exact_integer_dot_product() {
        for dims in [1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 100, 383, 384, 385, 1000] {
            let rows = stress_rows(dims);
            let quantized = raw_rows(dims, rows.concat());
            let local_ids: Vec<u32> = (0..rows.len() as u32).collect();
            for query_codes in &rows {
                let query = QuantizedQuery {
                    codes: query_codes.clone(),
                    scale: 1.0,
                };
                let mut dispatched = Vec::new();
                let all = RowRun {
                    first_row: 0,
                    local_ids: &local_ids,
                };
                let num_scored = quantized.scan(
                    &query,
                    all,
                    |_| true,
                    |score: f32, local_id| dispatched.push((score.to_bits(), local_id)),
                );
                let mut portable = Vec::new();
                quantized.scan_with(
                    &query,
                    all,
                    |_| true,
                    |score: f32, local_id| portable.push((score.to_bits(), local_id)),
                    |_| {},
                );
                assert_eq!(num_scored, rows.len() as u64);
                assert_eq!(dispatched, portable, "dims {dims}");
                for (row, (score_bits, _)) in rows.iter().zip(&dispatched) {
                    #[allow(clippy::cast_precision_loss)]
                    let expected = naive_dot_i8(query_codes, row) as f32;
                    assert_eq!(f32::from_bits(*score_bits), expected, "dims {dims}");
                }
            }
        }
        // The largest product sums: 1 000 × 128² = 16 384 000 < 2^24.
        assert_eq!(dot_i8(&[-128; 1000], &[-128; 1000]), 16_384_000);
        assert_eq!(dot_i8(&[-128; 1000], &[127; 1000]), -16_256_000);
        assert_eq!(dot_i8(&[], &[]), 0);
    }

    /// A scan reads the rows from `first_row` on, one per local id, and skips what
    /// `keep` turns away — in the AVX2 copy (with its prefetches) as in the portable one.
    #[test]
    fn a_scan_reads_its_rows_from_first_row_and_skips_what_keep_drops() {
        let dims = 5;
        let quantized = raw_rows(
            dims,
            (0..30)
                .map(|row| vec![row as i8; dims])
                .collect::<Vec<_>>()
                .concat(),
        );
        let query = QuantizedQuery {
            codes: vec![1; dims],
            scale: 1.0,
        };
        let local_ids: Vec<u32> = (0..20).map(|at| 100 + at).collect();
        let keep = |local_id: u32| !local_id.is_multiple_of(3);
        let mut found = Vec::new();
        let rows = RowRun {
            first_row: 10,
            local_ids: &local_ids,
        };
        let num_scored = quantized.scan(&query, rows, keep, |score, local_id| {
            found.push((score, local_id));
        });
        let expected: Vec<(f32, u32)> = (0..20u32)
            .filter(|at| keep(100 + at))
            .map(|at| ((10 + at) as f32 * dims as f32, 100 + at))
            .collect();
        assert_eq!(found, expected);
        assert_eq!(num_scored, expected.len() as u64);
    }
}
