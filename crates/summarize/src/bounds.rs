//! The bounds a summary written by someone other than this crate must keep before it
//! reaches the TOC: a model's answer (checked as it is read) and, in cluster mode, a
//! summary another node published to the log (checked again by each replica, because
//! nothing in the log is trusted to be well formed). An overlong title or a flood of
//! bullets is a model gone off the rails; a grip the node does not hold is an invention.

use std::collections::BTreeSet;

use memory_toc::GripId;

use crate::Summary;

/// Longest accepted title, characters.
pub const MAX_TITLE_CHARS: usize = 120;
/// Longest accepted summary, characters.
pub const MAX_SUMMARY_CHARS: usize = 1_500;
/// Most accepted bullets.
pub const MAX_BULLETS: usize = 12;
/// Longest accepted bullet, characters.
pub const MAX_BULLET_CHARS: usize = 300;
/// Most accepted keywords.
pub const MAX_KEYWORDS: usize = 16;
/// Longest accepted keyword, characters.
pub const MAX_KEYWORD_CHARS: usize = 80;

/// Checks `summary` against the bounds above, and that every grip its bullets cite is
/// in `grips` (the grips the node was summarized from). Texts must be trimmed and
/// non-empty; the whole summary is rejected on the first failure, with what failed.
///
/// # Errors
/// A description of the first bound `summary` breaks.
pub fn check_summary(summary: &Summary, grips: &BTreeSet<GripId>) -> Result<(), String> {
    checked("title", &summary.title, MAX_TITLE_CHARS)?;
    if let Some(text) = &summary.summary {
        checked("summary", text, MAX_SUMMARY_CHARS)?;
    }
    if summary.bullets.len() > MAX_BULLETS {
        return Err(format!(
            "{} bullets, more than {MAX_BULLETS}",
            summary.bullets.len()
        ));
    }
    for (index, bullet) in summary.bullets.iter().enumerate() {
        checked(
            &format!("bullet {}", index + 1),
            &bullet.text,
            MAX_BULLET_CHARS,
        )?;
        if let Some(unknown) = bullet.grip_ids.iter().find(|grip| !grips.contains(grip)) {
            return Err(format!(
                "bullet {} cites grip {unknown}, which the node does not hold",
                index + 1
            ));
        }
    }
    if summary.keywords.len() > MAX_KEYWORDS {
        return Err(format!(
            "{} keywords, more than {MAX_KEYWORDS}",
            summary.keywords.len()
        ));
    }
    for keyword in &summary.keywords {
        checked("keyword", keyword, MAX_KEYWORD_CHARS)?;
    }
    Ok(())
}

fn checked(what: &str, text: &str, max_chars: usize) -> Result<(), String> {
    if text.trim().is_empty() || text.trim().len() != text.len() {
        return Err(format!("{what} is empty or not trimmed"));
    }
    let num_chars = text.chars().count();
    if num_chars > max_chars {
        return Err(format!(
            "{what} has {num_chars} characters, more than {max_chars}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use memory_toc::TocBullet;

    use super::*;

    fn summary(grip: GripId) -> Summary {
        Summary {
            title: "JWT expiry".to_owned(),
            summary: Some("Chose 15 minutes.".to_owned()),
            bullets: vec![TocBullet {
                text: "Set the expiry".to_owned(),
                grip_ids: vec![grip],
            }],
            keywords: vec!["jwt".to_owned()],
        }
    }

    #[test]
    fn a_summary_within_bounds_citing_held_grips_passes() {
        let grip = GripId::derive("default", 1, "e1", 0);
        assert_eq!(
            check_summary(&summary(grip), &BTreeSet::from([grip])),
            Ok(())
        );
    }

    type Change = Box<dyn Fn(&mut Summary)>;

    #[test]
    fn each_bound_rejects_with_what_failed() {
        let grip = GripId::derive("default", 1, "e1", 0);
        let held = BTreeSet::from([grip]);
        let other = GripId::derive("default", 2, "e2", 0);
        let cases: Vec<(Change, &str)> = vec![
            (Box::new(|s| s.title = String::new()), "title is empty"),
            (
                Box::new(|s| s.title = " padded".to_owned()),
                "title is empty or not trimmed",
            ),
            (Box::new(|s| s.title = "x".repeat(121)), "title has 121"),
            (
                Box::new(|s| s.summary = Some("y".repeat(1_501))),
                "summary has 1501",
            ),
            (
                Box::new(|s| s.bullets = vec![s.bullets[0].clone(); 13]),
                "13 bullets",
            ),
            (
                Box::new(move |s| s.bullets[0].grip_ids.push(other)),
                "cites grip",
            ),
            (
                Box::new(|s| s.keywords = vec!["k".to_owned(); 17]),
                "17 keywords",
            ),
            (
                Box::new(|s| s.keywords = vec!["k".repeat(81)]),
                "keyword has 81",
            ),
        ];
        for (change, expected) in cases {
            let mut bad = summary(grip);
            change(&mut bad);
            let error = check_summary(&bad, &held).expect_err(expected);
            assert!(error.contains(expected), "{error} lacks {expected}");
        }
    }
}
