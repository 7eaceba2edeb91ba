//! [`RankingWeights`]: the hybrid search spec's ranking weights (`[teleport.ranking]`),
//! apart from the ranking itself so that fusion settings can hold them without the
//! ranking and fusion files importing each other.

use memory_ideas::Sector;
use serde::{Deserialize, Serialize};

/// The spec's weights (`[teleport.ranking]`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RankingWeights {
    /// Weight of the cosine similarity.
    pub semantic: f32,
    /// Weight of the BM25 score over 10, capped at 1.
    pub keyword: f32,
    /// Weight of salience.
    pub salience: f32,
    /// Weight of recency.
    pub recency: f32,
    /// Recency decay per day.
    pub recency_decay_per_day: f32,
    /// Boosts of reflective, semantic, procedural, emotional and episodic.
    pub sector_boosts: [f32; 5],
    /// Salience of evidence no idea stands for.
    pub default_salience: f32,
}

impl Default for RankingWeights {
    fn default() -> Self {
        RankingWeights {
            semantic: 0.4,
            keyword: 0.25,
            salience: 0.2,
            recency: 0.15,
            recency_decay_per_day: 0.05,
            sector_boosts: Sector::ALL.map(Sector::default_boost),
            default_salience: 0.3,
        }
    }
}

impl RankingWeights {
    pub(crate) fn boost(&self, sector: Sector) -> f32 {
        let index = Sector::ALL
            .iter()
            .position(|candidate| *candidate == sector)
            .unwrap_or(Sector::ALL.len() - 1);
        self.sector_boosts[index]
    }
}
