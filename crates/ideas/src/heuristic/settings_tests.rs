use super::*;

fn one(text: &str) -> Setting {
    let found = settings(text);
    assert_eq!(found.len(), 1, "{text}: {found:?}");
    found.into_iter().next().expect("one")
}

#[test]
fn identifiers_and_phrases_take_normalised_values() {
    let ttl = one("refresh_token_ttl is 14 days");
    assert_eq!(ttl.key.ident_opt.as_deref(), Some("refreshtokenttl"));
    assert_eq!(ttl.values, ["dur:1209600"]);
    assert_eq!(one("`refresh_token_ttl` = **14d**").values, ttl.values);
    assert_eq!(one("refresh_token_ttl becomes 2 weeks").values, ttl.values);
    let access = one("JWT access token expiry is 15 minutes");
    assert_eq!(access.key.terms, ["access", "expiry", "jwt", "token"]);
    assert_eq!(access.values, ["dur:900"]);
    assert!(one("access token stays 15m").agrees_with(&access));
    assert!(one("set the refresh TTL to 30 days").conflicts_with(&ttl));
    assert_eq!(one("ENRICH_WORKERS=4").values, ["n:4"]);
    assert_eq!(
        one("a 30-second reuse grace window").key.terms,
        [stem("grace"), stem("reuse"), stem("window")]
    );
    assert_eq!(
        one("per-IP limit 600/min").values,
        one("limit of 10 per second").values
    );
}

#[test]
fn a_colon_list_gives_all_its_values_to_the_key() {
    let ttl = one("refresh_token_ttl: web 14 days, mobile 30 days");
    assert_eq!(ttl.values, ["dur:1209600", "dur:2592000"]);
    let old = one("refresh_token_ttl becomes 30 days for mobile clients (client_type=mobile)");
    assert!(ttl.agrees_with(&old), "{ttl:?} {old:?}");
}

#[test]
fn quantities_are_found_with_or_without_a_key() {
    assert_eq!(
        quantities("cap 500k entries, evict after 30 min idle (index by last_seen)"),
        ["dur:1800", "n:500000"]
    );
    assert_eq!(
        quantities("a 30-second window, 2Gi limit"),
        ["bytes:2147483648", "dur:30"]
    );
}

#[test]
fn dates_versions_and_bare_counts_are_not_settings() {
    assert!(settings("Decision 2026-02-12 for v0.8.2 and SEC-112").is_empty());
    assert!(settings("It failed 3 times").is_empty());
    assert!(settings("web stays 14 days").len() == 1);
}

#[test]
fn keys_match_by_identifier_or_contained_stems() {
    let ttl = one("refresh_token_ttl is 14 days");
    let camel = one("auth.refreshTokenTtl = 14d");
    let single = one("timeout is 5 minutes");
    let lock = one("lock_timeout is 3s");
    assert!(camel.key.matches(&ttl.key));
    assert!(
        !single.key.matches(&lock.key),
        "one generic word is not enough"
    );
}

#[test]
fn a_value_the_sentence_negates_or_replaces_is_not_given() {
    let change = one("Changing the Postgres statement timeout: ten seconds, not 30 seconds.");
    assert_eq!(change.values, ["dur:10"], "{change:?}");
    assert_eq!(
        quantities("Going with 2 hours instead of half an hour for the session cache TTL."),
        ["dur:7200"]
    );
}

#[test]
fn a_name_after_is_or_to_is_a_value() {
    let bucket = one("The bucket for user uploads is acme-uploads-prod.");
    assert_eq!(bucket.values, ["name:acmeuploadsprod"], "{bucket:?}");
    let moved = one("We should switch the bucket for user uploads to acme-media-prod.");
    assert!(moved.conflicts_with(&bucket), "{moved:?} vs {bucket:?}");
    let owner = one("The owner of the payments service is Priya.");
    assert_eq!(owner.values, ["name:priya"]);
    // One word of key is not enough for a name, and a plain word is no value.
    assert!(settings("It is Friday.").is_empty());
    assert!(settings("The plan is simple.").is_empty());
}

#[test]
fn a_setting_stated_as_in_force() {
    assert!(states_setting("The database connection pool size is 10."));
    assert!(states_setting(
        "Update: our error tracking service is honeybadger.io now."
    ));
    assert!(states_setting(
        "The owner of the payments service is Priya Nair in CODEOWNERS."
    ));
    // Not a key of two words, not at the start, or no value.
    assert!(!states_setting(
        "The image is 410 MB because the base ships a compiler."
    ));
    assert!(!states_setting(
        "At 10 the pool size is fine for the export."
    ));
    assert!(!states_setting("The pool size is what bothers me."));
    // The setting must be the subject, not a value said later in the sentence.
    assert!(!states_setting(
        "The only statement that touches users is the FK, under a 3 s lock_timeout."
    ));
    assert!(!states_setting("The dblClick is client-side only."));
}
