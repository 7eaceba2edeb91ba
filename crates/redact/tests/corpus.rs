//! Every rule against the fake-key corpus (`tests/corpus/secrets.jsonl`, generated with a
//! fixed seed; no real key): each positive line loses its secret to its rule, each
//! near-miss is left alone by its rule, innocent lines by every rule. Prints precision
//! and recall per rule family for docs/benchmarks.md (`cargo test -p memory-redact
//! --test corpus -- --nocapture`).

use memory_redact::Redactor;
use serde_json::Value;

#[test]
fn every_rule_fires_on_its_fake_key_and_not_on_its_near_misses() {
    let redactor = Redactor::shipped(b"corpus key").expect("rules");
    let corpus = include_str!("corpus/secrets.jsonl");
    let (mut true_positives, mut false_negatives, mut false_positives, mut true_negatives) =
        (0, 0, 0, 0);
    let mut failures: Vec<String> = Vec::new();
    let mut rules_seen = std::collections::BTreeSet::new();
    for (number, line) in corpus.lines().enumerate() {
        let case: Value = serde_json::from_str(line).expect("corpus line");
        let text = case["text"].as_str().expect("text");
        let rule = case["rule"].as_str();
        let (redacted, findings) = redactor.redact_text(text);
        match (rule, case["secret"].as_str()) {
            (Some(rule), Some(secret)) => {
                rules_seen.insert(rule.to_owned());
                // Taken by its rule, or by another rule first (an overlap): the secret
                // is gone, which is what matters.
                if !redacted.contains(secret) {
                    true_positives += 1;
                } else {
                    false_negatives += 1;
                    failures.push(format!(
                        "line {}: {rule} missed {secret:?} in {text:?}",
                        number + 1
                    ));
                }
            }
            (Some(rule), None) => {
                if findings.count(rule) > 0 {
                    false_positives += 1;
                    failures.push(format!(
                        "line {}: {rule} fired on its near-miss {text:?} -> {redacted:?}",
                        number + 1
                    ));
                } else {
                    true_negatives += 1;
                }
            }
            (None, _) => {
                if findings.is_empty() {
                    true_negatives += 1;
                } else {
                    false_positives += 1;
                    failures.push(format!(
                        "line {}: innocent text redacted: {text:?} -> {redacted:?} ({findings})",
                        number + 1
                    ));
                }
            }
        }
    }
    let every_rule: Vec<&str> = redactor.rule_ids().collect();
    let untested: Vec<&&str> = every_rule
        .iter()
        .filter(|id| !rules_seen.contains(**id))
        .collect();
    println!(
        "corpus: {true_positives} secrets taken, {false_negatives} missed, {false_positives} false alarms, {true_negatives} near-misses and innocent lines left; recall {:.3}, precision {:.3}; {} rules, {} without a corpus line: {untested:?}",
        f64::from(true_positives) / f64::from(true_positives + false_negatives),
        f64::from(true_positives) / f64::from(true_positives + false_positives),
        every_rule.len(),
        untested.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
