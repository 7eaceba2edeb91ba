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
//! the approximation error of the last one.
//!
//! The copy is derived, never stored: it is built when a segment is built or loaded.

/// Integer components are in `-127..=127`.
const LEVELS: f32 = 127.0;

/// Lanes of the integer dot product (the compiler keeps them in SIMD registers).
const LANES: usize = 16;

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

/// Int8 rows of a segment's vectors, in local-id order.
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

    /// Approximately `query · vector` of the document at `local_id`.
    pub(crate) fn score(&self, query: &QuantizedQuery, local_id: u32) -> f32 {
        let at = local_id as usize;
        let row = &self.codes[at * self.dims..(at + 1) * self.dims];
        #[allow(clippy::cast_precision_loss)]
        let dot = dot_i8(&query.codes, row) as f32;
        dot * query.scale * self.scales[at]
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

/// The best `capacity` local ids by approximate score: the candidates an exact scan
/// scores again with f32.
pub(crate) struct ApproxTop {
    capacity: usize,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<Approx>>,
}

#[derive(Clone, Copy, Debug)]
struct Approx {
    score: f32,
    local_id: u32,
}

impl PartialEq for Approx {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Approx {}

impl PartialOrd for Approx {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Approx {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.local_id.cmp(&self.local_id))
    }
}

impl ApproxTop {
    pub(crate) fn new(capacity: usize) -> Self {
        ApproxTop {
            capacity,
            heap: std::collections::BinaryHeap::with_capacity(capacity + 1),
        }
    }

    pub(crate) fn push(&mut self, score: f32, local_id: u32) {
        let candidate = Approx { score, local_id };
        if self.heap.len() < self.capacity {
            self.heap.push(std::cmp::Reverse(candidate));
        } else if self
            .heap
            .peek()
            .is_some_and(|std::cmp::Reverse(worst)| candidate > *worst)
        {
            self.heap.pop();
            self.heap.push(std::cmp::Reverse(candidate));
        }
    }

    /// The local ids kept, in no particular order.
    pub(crate) fn into_local_ids(self) -> impl Iterator<Item = u32> {
        self.heap
            .into_iter()
            .map(|std::cmp::Reverse(kept)| kept.local_id)
    }
}

/// The integer dot product, in sixteen partial sums (exact: no overflow below 2^31 /
/// 127² ≈ 133 000 dimensions).
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
                let approx = rows.score(&quantized, local_id as u32);
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
        let mut kept: Vec<u32> = top.into_local_ids().collect();
        kept.sort_unstable();
        assert_eq!(kept, [2, 4]);
    }
}
