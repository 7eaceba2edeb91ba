use super::*;

fn classify(sentence: &str, speaker: Speaker) -> Option<(Intent, f32)> {
    let text = cue_text(sentence);
    let num_terms = crate::heuristic::facts::salient_terms(sentence).len();
    read(&text, sentence, speaker, num_terms)
        .cue_opt
        .map(|cue| (cue.intent, cue.confidence))
}

fn intent_of(sentence: &str, speaker: Speaker) -> Option<Intent> {
    classify(sentence, speaker).map(|(intent, _)| intent)
}

#[test]
fn decisions() {
    for sentence in [
        "We decided: every migration sets lock_timeout to 3s.",
        "Let's go with rate-limiter-flexible for the login limiter.",
        "We'll use Postgres for the job queue.",
        "Decision 2026-01-22: postcard replaces bincode for spool files.",
        "Agreed, we're switching to postcard.",
        "So we're changing the decision: refresh_token_ttl becomes 30 days.",
        "From now on every PR needs a changelog entry.",
        "Policy: no automatic retries in CI.",
    ] {
        assert_eq!(
            intent_of(sentence, Speaker::User),
            Some(Intent::Decision),
            "{sentence}"
        );
    }
    let (_, firm) =
        classify("We decided to keep Redis for sessions.", Speaker::User).expect("firm");
    let (_, tentative) = classify(
        "Maybe we could keep Redis for sessions, I think.",
        Speaker::User,
    )
    .unwrap_or((Intent::Decision, 0.0));
    assert!(
        firm > tentative,
        "hedges lower confidence: {firm} vs {tentative}"
    );
    let (intent, proposal) = classify(
        "I'd take 15 minutes, with refresh tokens living 14 days.",
        Speaker::Assistant,
    )
    .expect("proposal");
    assert_eq!(intent, Intent::Decision);
    assert!(
        proposal < 0.5,
        "an assistant's proposal is tentative: {proposal}"
    );
    assert_eq!(
        intent_of("We haven't decided on the queue yet.", Speaker::User),
        None
    );
}

#[test]
fn no_longer_decides_only_with_a_value_after_it() {
    assert_eq!(
        intent_of(
            "The retry count is no longer 3, it's 5 from today.",
            Speaker::User
        ),
        Some(Intent::Decision)
    );
    assert_eq!(
        intent_of(
            "The search indexer's heap is no longer -Xmx2g.",
            Speaker::User
        ),
        Some(Intent::Decision)
    );
    assert_ne!(
        intent_of(
            "The per-partition loops are no longer commit-bound, next bottleneck is decode.",
            Speaker::Assistant
        ),
        Some(Intent::Decision)
    );
}

#[test]
fn conclusions() {
    for sentence in [
        "Turns out the consumer was committing synchronously after every message.",
        "The root cause is a shared test database truncated by every worker.",
        "So the problem was the default in-memory store.",
        "That means the access-token lifetime is the revocation window.",
        "Found the leak in the sessionizer map.",
    ] {
        assert_eq!(
            intent_of(sentence, Speaker::Assistant),
            Some(Intent::Conclusion),
            "{sentence}"
        );
    }
}

#[test]
fn questions() {
    for sentence in [
        "Where does the signing key live?",
        "Should we pause all partitions or only the full ones?",
        "why was I doing the async refactor",
    ] {
        assert_eq!(
            intent_of(sentence, Speaker::User),
            Some(Intent::Question),
            "{sentence}"
        );
    }
    assert_eq!(
        intent_of(
            "Before I start: how long should access tokens live?",
            Speaker::Assistant
        ),
        Some(Intent::Question)
    );
    // A request that asks nothing, or an assistant asking for permission, is no question.
    assert_eq!(
        intent_of(
            "Can you add that to the migration job and document it?",
            Speaker::User
        ),
        None
    );
    assert_eq!(intent_of("Do the two-step rollout.", Speaker::User), None);
    assert_eq!(
        intent_of(
            "Do it on all pods for now, set ENRICH_WORKERS=4.",
            Speaker::User
        ),
        None
    );
    assert_eq!(
        intent_of("does it still work after the rollback", Speaker::User),
        Some(Intent::Question)
    );
    assert_eq!(intent_of("OK to swap?", Speaker::Assistant), None);
    assert_eq!(
        intent_of(
            "That table needs a migration; do you want it in this PR?",
            Speaker::Assistant
        ),
        None
    );
    // A question that mentions an error is still a question.
    assert_eq!(
        intent_of(
            "Why does the build fail with a linker error?",
            Speaker::User
        ),
        Some(Intent::Question)
    );
}

#[test]
fn problems() {
    for sentence in [
        "The refresh token spec is flaky on CI.",
        "Login fails with a 500 since this morning.",
        "The signup form is broken on Safari.",
        "Pods got OOMKilled during the S3 incident.",
        "This looks like a regression from the last release.",
    ] {
        assert_eq!(
            intent_of(sentence, Speaker::User),
            Some(Intent::Problem),
            "{sentence}"
        );
    }
    for sentence in [
        "Zero decode errors in prod since the deploy.",
        "The limiter is not a latency concern and there are no errors.",
        "That message is useless: serde throws away the individual errors.",
        "SET lock_timeout first, so if users is busy we fail fast.",
        "Failed-login limit unchanged.",
    ] {
        assert_eq!(intent_of(sentence, Speaker::Assistant), None, "{sentence}");
    }
    // A weak problem word in an instruction is a reason, not a report.
    assert_eq!(
        intent_of(
            "Add an alert for partition skew so we catch it before lag builds up.",
            Speaker::User
        ),
        None
    );
    // An identifier named like a problem is not one.
    assert_eq!(
        intent_of("Rename `handle_errors` to `on_failure`.", Speaker::User),
        None
    );
}

#[test]
fn solutions() {
    for sentence in [
        "The fix is to store offsets and let librdkafka commit them in the background.",
        "Fixed by giving each jest worker its own schema.",
        "Fix: enable.auto.offset.store=false plus auto commit every 5 s.",
        "As a workaround, raise ENRICH_WORKERS to 4 on all pods.",
        "To fix this, normalise req.ip before keying the limiter.",
    ] {
        assert_eq!(
            intent_of(sentence, Speaker::Assistant),
            Some(Intent::Solution),
            "{sentence}"
        );
    }
    assert_eq!(intent_of("That didn't fix it.", Speaker::User), None);
}

#[test]
fn todos() {
    for sentence in [
        "TODO(auth): move JWT signing to AWS KMS.",
        "We need to add an alert for partition skew.",
        "Later we should drop the bincode reader.",
        "Follow-up: issue #147 for the ack-back gap.",
        "Remind me to rotate the signing key next quarter.",
    ] {
        assert_eq!(
            intent_of(sentence, Speaker::User),
            Some(Intent::Todo),
            "{sentence}"
        );
    }
    assert_eq!(
        intent_of("We don't need to change the callers.", Speaker::User),
        None
    );
}

#[test]
fn preferences() {
    for sentence in [
        "I prefer small PRs with the migration separate.",
        "Always use the transaction handle inside rotateRefreshToken.",
        "Don't use jest.retryTimes to hide flaky tests.",
        "Please stop adding comments to every line.",
        "I don't want a private key in the repo.",
    ] {
        assert_eq!(
            intent_of(sentence, Speaker::User),
            Some(Intent::Preference),
            "{sentence}"
        );
    }
    // An assistant has no preferences.
    assert_eq!(
        intent_of("I prefer the second option.", Speaker::Assistant),
        None
    );
}

#[test]
fn context_is_weak() {
    let (intent, confidence) =
        classify("We use node-pg-migrate for schema changes.", Speaker::User).expect("context");
    assert_eq!(intent, Intent::Context);
    assert!((0.3..=0.4).contains(&confidence), "{confidence}");
}

#[test]
fn change_and_keep_cues() {
    let reading = read(
        &cue_text("refresh_token_ttl becomes 30 days"),
        "",
        Speaker::User,
        3,
    );
    assert!(reading.is_change && !reading.is_keep);
    let reading = read(
        &cue_text("access token stays 15 minutes"),
        "",
        Speaker::User,
        3,
    );
    assert!(reading.is_keep && !reading.is_change);
    assert!(change_and_keep(&cue_text("we switched from bincode to postcard")).0);
}

#[test]
fn decision_lists_start_after_the_lead_in() {
    let raw =
        "OK, so we're changing the decision: access token stays 15 minutes, web stays 14 days.";
    let start = decision_list_start(raw).expect("lead-in");
    assert!(
        raw[start..].starts_with("access token"),
        "{}",
        &raw[start..]
    );
    assert_eq!(decision_list_start("We decided to keep it."), None);
}

#[test]
fn lead_ins_give_their_bullets_an_intent() {
    let cue = lead_in_intent(
        &cue_text("Summary of today's decisions:"),
        Speaker::Assistant,
    )
    .expect("lead-in");
    assert_eq!(cue.intent, Intent::Decision);
    assert_eq!(
        lead_in_intent(&cue_text("Next steps:"), Speaker::User).map(|cue| cue.intent),
        Some(Intent::Todo)
    );
    assert_eq!(
        lead_in_intent(&cue_text("Proposed plan:"), Speaker::User),
        None
    );
}
