//! The arithmetic every score is made of: [`dot`] of normalized vectors (cosine
//! similarity), and `Embedding`, a normalized vector as an HNSW point.

use serde::{Deserialize, Serialize};

use crate::{Result, VectorError};

/// Lanes of the dot product: eight independent f32 accumulators, which the compiler
/// keeps in SIMD registers (two SSE or one AVX register) without reassociating floats.
const LANES: usize = 8;

/// The dot product of two vectors of equal length (for normalized vectors, their
/// cosine similarity). The sum is taken in eight partial sums, so the result can
/// differ from a sequential sum in the last bits; it is the same for the same inputs.
#[must_use]
pub fn dot(left: &[f32], right: &[f32]) -> f32 {
    debug_assert_eq!(left.len(), right.len());
    let (left_chunks, left_rest) = left.as_chunks::<LANES>();
    let (right_chunks, right_rest) = right.as_chunks::<LANES>();
    let mut sums = [0.0f32; LANES];
    for (left_chunk, right_chunk) in left_chunks.iter().zip(right_chunks) {
        for ((sum, left_value), right_value) in sums.iter_mut().zip(left_chunk).zip(right_chunk) {
            *sum += left_value * right_value;
        }
    }
    let mut total =
        ((sums[0] + sums[4]) + (sums[1] + sums[5])) + ((sums[2] + sums[6]) + (sums[3] + sums[7]));
    for (left_value, right_value) in left_rest.iter().zip(right_rest) {
        total += left_value * right_value;
    }
    total
}

/// `vector` divided by its length, after checking it has `dims` finite components and
/// is not all zeros.
pub fn normalize(vector: &[f32], dims: usize) -> Result<Vec<f32>> {
    if vector.len() != dims {
        return Err(VectorError::WrongDimensions {
            expected: dims,
            found: vector.len(),
        });
    }
    if vector.iter().any(|value| !value.is_finite()) {
        return Err(VectorError::InvalidVector(
            "it has a NaN or infinite component",
        ));
    }
    // Scaled by the largest component first, so that squares of huge components do not
    // overflow and squares of tiny ones do not vanish.
    let max_abs = vector
        .iter()
        .fold(0.0f32, |max, value| max.max(value.abs()));
    if max_abs == 0.0 {
        return Err(VectorError::InvalidVector("it is all zeros"));
    }
    let scaled: Vec<f32> = vector.iter().map(|value| value / max_abs).collect();
    let norm = dot(&scaled, &scaled).sqrt();
    Ok(scaled.into_iter().map(|value| value / norm).collect())
}

/// A normalized vector, as stored in a segment's HNSW graph. Its distance to another
/// is `1 - cosine`, so the nearest points are the most similar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Embedding(pub(crate) Box<[f32]>);

impl instant_distance::Point for Embedding {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dot(&self.0, &other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_dot(left: &[f32], right: &[f32]) -> f64 {
        left.iter()
            .zip(right)
            .map(|(l, r)| f64::from(*l) * f64::from(*r))
            .sum()
    }

    #[test]
    fn dot_matches_a_naive_sum_for_every_remainder() {
        for len in 0..40 {
            let left: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let right: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            let expected = naive_dot(&left, &right);
            let actual = f64::from(dot(&left, &right));
            assert!(
                (actual - expected).abs() < 1e-5,
                "len {len}: {actual} vs {expected}"
            );
        }
    }

    #[test]
    fn normalize_yields_unit_length_and_rejects_what_has_no_direction() -> Result<()> {
        let unit = normalize(&[3.0, 4.0], 2)?;
        assert_eq!(unit, vec![0.6, 0.8]);
        let huge = normalize(&[3e30, 4e30], 2)?;
        assert!((dot(&huge, &huge) - 1.0).abs() < 1e-6);
        let tiny = normalize(&[3e-40, 4e-40], 2)?;
        assert!((dot(&tiny, &tiny) - 1.0).abs() < 1e-6);
        assert!(matches!(
            normalize(&[1.0], 2),
            Err(VectorError::WrongDimensions {
                expected: 2,
                found: 1
            })
        ));
        assert!(matches!(
            normalize(&[0.0, 0.0], 2),
            Err(VectorError::InvalidVector(_))
        ));
        assert!(matches!(
            normalize(&[f32::NAN, 1.0], 2),
            Err(VectorError::InvalidVector(_))
        ));
        assert!(matches!(
            normalize(&[f32::INFINITY, 1.0], 2),
            Err(VectorError::InvalidVector(_))
        ));
        Ok(())
    }
}
