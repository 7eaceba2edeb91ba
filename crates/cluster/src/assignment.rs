//! Which group of daemons owns which partitions. Every daemon of a group consumes and
//! serves its group's partitions; a partition belongs to at most one group. The whole
//! table is one KV value, so one compare-and-set changes it atomically.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::ClusterError;

/// The assignment table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignments {
    /// Group → its partitions.
    pub groups: BTreeMap<String, BTreeSet<u16>>,
}

/// The KV key of the table.
pub const ASSIGNMENTS_KEY: &str = "assignments";

impl Assignments {
    /// Gives `partitions` to `group`, taking them from whichever group had them; returns
    /// the partitions that moved from another group, by group.
    pub fn assign(
        &mut self,
        group: &str,
        partitions: &BTreeSet<u16>,
    ) -> BTreeMap<String, BTreeSet<u16>> {
        let mut moved: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
        for (other, owned) in &mut self.groups {
            if other == group {
                continue;
            }
            let taken: BTreeSet<u16> = owned.intersection(partitions).copied().collect();
            if !taken.is_empty() {
                owned.retain(|partition| !taken.contains(partition));
                moved.insert(other.clone(), taken);
            }
        }
        self.groups.retain(|_, owned| !owned.is_empty());
        self.groups
            .entry(group.to_owned())
            .or_default()
            .extend(partitions.iter().copied());
        moved
    }

    /// The group that owns `partition`.
    #[must_use]
    pub fn owner(&self, partition: u16) -> Option<&str> {
        self.groups
            .iter()
            .find(|(_, owned)| owned.contains(&partition))
            .map(|(group, _)| group.as_str())
    }

    /// Partitions of `0..partitions` no group owns.
    #[must_use]
    pub fn unassigned(&self, partitions: u16) -> BTreeSet<u16> {
        (0..partitions)
            .filter(|partition| self.owner(*partition).is_none())
            .collect()
    }
}

/// `0-15,32-47` for a set of partitions (what [`parse_partitions`] reads).
#[must_use]
pub fn format_partitions(parts: &BTreeSet<u16>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut iter = parts.iter().copied().peekable();
    while let Some(first) = iter.next() {
        let mut last = first;
        while iter.peek() == Some(&(last + 1)) {
            last += 1;
            iter.next();
        }
        out.push(if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        });
    }
    out.join(",")
}

/// `0-63`, `0-15,32-47`, `7`: the partitions named, each below `partitions`.
///
/// # Errors
/// A list that does not parse, an empty or reversed range, or a partition out of range.
pub fn parse_partitions(given: &str, partitions: u16) -> Result<BTreeSet<u16>, ClusterError> {
    let bad = |why: String| ClusterError::Partitions {
        given: given.to_owned(),
        why,
    };
    let number = |text: &str| {
        text.trim()
            .parse::<u16>()
            .map_err(|_| bad(format!("{text:?} is not a partition number")))
    };
    let mut out = BTreeSet::new();
    for part in given.split(',').filter(|part| !part.trim().is_empty()) {
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (number(first)?, number(last)?),
            None => {
                let single = number(part)?;
                (single, single)
            }
        };
        if first > last {
            return Err(bad(format!("{part:?} runs backwards")));
        }
        if last >= partitions {
            return Err(bad(format!(
                "the log has partitions 0 to {}, not {last}",
                partitions - 1
            )));
        }
        out.extend(first..=last);
    }
    if out.is_empty() {
        return Err(bad("names no partition".to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_are_checked() {
        assert_eq!(parse_partitions("0-3", 64).expect("ok").len(), 4);
        assert_eq!(
            parse_partitions("0-1, 5,9-10", 64).expect("ok"),
            BTreeSet::from([0, 1, 5, 9, 10])
        );
        assert!(parse_partitions("0-64", 64).is_err());
        assert!(parse_partitions("5-2", 64).is_err());
        assert!(parse_partitions("x", 64).is_err());
        assert!(parse_partitions("", 64).is_err());
    }

    #[test]
    fn a_partition_moves_between_groups_whole() {
        let mut table = Assignments::default();
        assert!(table.assign("a", &(0..8).collect()).is_empty());
        let moved = table.assign("b", &(4..12).collect());
        assert_eq!(moved["a"], (4..8).collect());
        assert_eq!(table.owner(3), Some("a"));
        assert_eq!(table.owner(5), Some("b"));
        assert_eq!(table.unassigned(16), (12..16).collect());
        table.assign("b", &(0..4).collect());
        assert!(!table.groups.contains_key("a"), "an empty group is dropped");
    }
}
