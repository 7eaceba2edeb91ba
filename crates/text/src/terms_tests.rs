//! Unit tests of [`crate::terms`]: tokenizing, stemming, stopwords and overlap scores.

use super::*;

fn score(text: &str, query: &str) -> Option<f32> {
    term_overlap_score(&TermIndex::new(text), &query_terms(query))
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_owned()).collect()
}

// tokenize

#[test]
fn tokenize_lowercases_and_splits_on_punctuation() {
    assert_eq!(
        tokenize("Fixed the JWT bug: tokens expire!"),
        strings(&["fixed", "the", "jwt", "bug", "tokens", "expire"])
    );
    assert_eq!(tokenize("Token:"), strings(&["token"]));
}

#[test]
fn tokenize_splits_paths() {
    assert_eq!(
        tokenize("src/auth/jwt.ts"),
        strings(&["src", "auth", "jwt", "ts"])
    );
}

#[test]
fn tokenize_splits_camel_case_and_keeps_the_compound() {
    assert_eq!(
        tokenize("getUserToken"),
        strings(&["get", "user", "token", "getusertoken"])
    );
}

#[test]
fn tokenize_splits_snake_case_and_keeps_the_compound() {
    assert_eq!(
        tokenize("snake_case_name"),
        strings(&["snake", "case", "name", "snakecasename"])
    );
    assert_eq!(tokenize("__init__"), strings(&["init"]));
    assert_eq!(
        tokenize("get_user_token"),
        strings(&["get", "user", "token", "getusertoken"])
    );
}

#[test]
fn tokenize_splits_acronyms() {
    assert_eq!(
        tokenize("HTTPServer"),
        strings(&["http", "server", "httpserver"])
    );
    assert_eq!(
        tokenize("XMLHttpRequest"),
        strings(&["xml", "http", "request", "xmlhttprequest"])
    );
    assert_eq!(tokenize("parseURL"), strings(&["parse", "url", "parseurl"]));
    assert_eq!(tokenize("JWTs URLs"), strings(&["jwts", "urls"]));
    assert_eq!(
        tokenize("IPv6Address"),
        strings(&["ipv6", "address", "ipv6address"])
    );
}

#[test]
fn tokenize_keeps_letters_with_digits_and_numbers() {
    assert_eq!(tokenize("v2"), strings(&["v2"]));
    assert_eq!(tokenize("sha256 utf8"), strings(&["sha256", "utf8"]));
    assert_eq!(
        tokenize("base64Encode"),
        strings(&["base64", "encode", "base64encode"])
    );
    assert_eq!(
        tokenize("on 2026-01-15 at 5"),
        strings(&["on", "2026", "01", "15", "at", "5"])
    );
}

#[test]
fn tokenize_drops_single_letters_but_not_single_digits() {
    assert_eq!(tokenize("a b c 1 x2 I"), strings(&["1", "x2"]));
    assert_eq!(tokenize("don't user's"), strings(&["don", "user"]));
    assert!(tokenize("").is_empty());
    assert!(tokenize("  ,.;/ - _ ").is_empty());
}

#[test]
fn tokenize_survives_non_ascii() {
    assert_eq!(
        tokenize("Zürich naïve café 東京"),
        strings(&["zürich", "naïve", "café", "東京"])
    );
    assert_eq!(tokenize("ZÜRICH Straße"), strings(&["zürich", "straße"]));
    assert_eq!(
        tokenize("naïveCafé"),
        strings(&["naïve", "café", "naïvecafé"])
    );
    // Emoji separate words; a lowercase that grows in length must not panic.
    assert_eq!(
        tokenize("🚀launch İstanbul"),
        strings(&["launch", "i\u{307}stanbul"])
    );
}

// stem

fn assert_same_stem(words: &[&str]) {
    let first = stem(words[0]);
    for word in words {
        assert_eq!(stem(word), first, "{word} does not stem like {}", words[0]);
    }
}

#[test]
fn stem_examples_from_the_brief() {
    assert_eq!(stem("tokens"), "token");
    assert_eq!(stem("token"), "token");
    assert_eq!(stem("queries"), "query");
    assert_eq!(stem("decided"), "decid");
    assert_eq!(stem("tokenizing"), "tokeniz");
    assert_same_stem(&["tokenize", "tokenizes", "tokenized", "tokenizing"]);
    assert_same_stem(&["decide", "decides", "decided", "deciding"]);
    assert_same_stem(&["expire", "expires", "expired", "expiring"]);
    assert_same_stem(&["query", "queries", "queried", "querying"]);
}

#[test]
fn stem_expiry_is_not_expire() {
    // Derivation, not inflection: documented as not conflated.
    assert_eq!(stem("expiry"), "expiry");
    assert_ne!(stem("expiry"), stem("expire"));
}

#[test]
fn stem_conflates_inflections() {
    assert_same_stem(&["use", "uses", "used", "using"]);
    assert_same_stem(&["debug", "debugs", "debugged", "debugging"]);
    assert_same_stem(&["embed", "embeds", "embedded", "embedding", "embeddings"]);
    assert_same_stem(&["queue", "queues", "queued", "queuing", "queueing"]);
    assert_same_stem(&["cache", "caches", "cached", "caching"]);
    assert_same_stem(&["code", "codes", "coded", "coding"]);
    assert_same_stem(&["note", "notes", "noted"]);
    assert_same_stem(&["plan", "plans", "planned", "planning"]);
    assert_same_stem(&["stop", "stops", "stopped", "stopping"]);
    assert_same_stem(&["add", "adds", "added", "adding"]);
    assert_same_stem(&["fix", "fixes", "fixed", "fixing"]);
    assert_same_stem(&["match", "matches", "matched", "matching"]);
    assert_same_stem(&["create", "creates", "created", "creating"]);
    assert_same_stem(&["enable", "enables", "enabled", "enabling"]);
    assert_same_stem(&["agree", "agrees", "agreed", "agreeing"]);
    assert_same_stem(&["exceed", "exceeds", "exceeded", "exceeding"]);
    assert_same_stem(&["need", "needs", "needed", "needing"]);
    assert_same_stem(&["status", "statuses"]);
    assert_same_stem(&["focus", "focuses", "focused", "focusing"]);
    assert_same_stem(&["class", "classes"]);
    assert_same_stem(&["process", "processes", "processed", "processing"]);
    assert_same_stem(&["try", "tries", "tried", "trying"]);
    assert_same_stem(&["policy", "policies"]);
    assert_same_stem(&["cookie", "cookies"]);
    assert_same_stem(&["panic", "panics", "panicked", "panicking"]);
    assert_same_stem(&["log", "logs", "logged", "logging"]);
    assert_same_stem(&["fill", "fills", "filled", "filling"]);
    assert_same_stem(&["cancel", "cancels", "canceled", "cancelled", "cancelling"]);
    assert_same_stem(&["install", "installs", "installed", "installing"]);
    assert_same_stem(&["model", "models", "modelled", "modeled"]);
    assert_same_stem(&["api", "apis"]);
    assert_same_stem(&["jwt", "jwts"]);
    assert_same_stem(&["gpu", "gpus"]);
    assert_same_stem(&["alias", "aliases"]);
}

#[test]
fn stem_handles_ly() {
    assert_eq!(stem("quickly"), "quick");
    assert_eq!(stem("weekly"), "week");
    assert_eq!(stem("really"), "real");
    assert_eq!(stem("carefully"), "careful");
    assert_eq!(stem("easily"), "easy");
    assert_same_stem(&["complete", "completely", "completed"]);
    assert_same_stem(&["report", "reportedly"]);
    for word in [
        "reply", "apply", "supply", "early", "daily", "anomaly", "assembly",
    ] {
        assert_eq!(stem(word), word);
    }
    assert_same_stem(&["reply", "replies", "replied"]);
    assert_same_stem(&["family", "families"]);
}

#[test]
fn stem_keeps_distinct_words_apart() {
    assert_ne!(stem("plane"), stem("plan"));
    assert_ne!(stem("note"), "not");
    assert_ne!(stem("story"), stem("store"));
    assert_ne!(stem("going"), "go");
    assert_eq!(stem("thing"), "thing");
    assert_eq!(stem("string"), "string");
    assert_eq!(stem("strings"), "string");
    assert_eq!(stem("need"), "need");
    assert_eq!(stem("speed"), "speed");
    assert_eq!(stem("news"), "news");
}

#[test]
fn stem_leaves_short_words_numbers_and_non_ascii_alone() {
    for word in [
        "is", "bus", "jwt", "ies", "eds", "2026", "15", "v2", "sha256", "http2s",
    ] {
        assert_eq!(stem(word), word);
    }
    for word in ["café", "naïve", "zürich", "東京", "cafés", "Tokens"] {
        assert_eq!(stem(word), word);
    }
    assert_eq!(stem(""), "");
}

#[test]
fn stem_never_goes_below_three_letters() {
    for word in [
        "uses", "used", "using", "ties", "tied", "dies", "aged", "eyed", "ones", "goes", "doing",
        "being", "sing", "ring", "ping", "seeing", "ally", "only", "ugly", "bees", "sees", "eses",
        "ieds", "inged", "edly", "ingly", "eeds",
    ] {
        let stemmed = stem(word);
        assert!(stemmed.len() >= 3, "{word} → {stemmed}");
    }
}

// stopwords and query terms

#[test]
fn stopwords_are_sorted_unique_and_lowercase() {
    for pair in STOPWORDS.windows(2) {
        assert!(pair[0] < pair[1], "{} is not before {}", pair[0], pair[1]);
    }
    for word in STOPWORDS {
        assert_eq!(word.to_lowercase(), *word);
        assert!(is_stopword(word));
    }
    for word in ["jwt", "token", "up", "down", "get", "use", "new"] {
        assert!(!is_stopword(word), "{word}");
    }
}

#[test]
fn query_terms_drops_stopwords_stems_and_dedupes_in_order() {
    assert_eq!(
        query_terms("What did we decide about JWT tokens?"),
        strings(&["decid", "jwt", "token"])
    );
    assert_eq!(
        query_terms("token Tokens TOKEN jwt"),
        strings(&["token", "jwt"])
    );
    assert_eq!(
        query_terms("getUserToken"),
        strings(&["get", "user", "token", "getusertoken"])
    );
}

#[test]
fn query_terms_of_stopwords_only_is_empty() {
    assert!(query_terms("what did we do about it, and why?").is_empty());
    assert!(query_terms("").is_empty());
    assert!(query_terms("?!").is_empty());
    assert_eq!(score("the JWT token", "what is the"), None);
}

// TermIndex

#[test]
fn term_index_holds_stems_without_stopwords() {
    let index = TermIndex::new("The tokens were expired; the JWT was not refreshed.");
    for term in ["token", "expir", "jwt", "refresh"] {
        assert!(index.contains(term), "{term}");
    }
    for word in ["the", "were", "was", "not", "tokens"] {
        assert!(!index.contains(word), "{word}");
    }
    assert_eq!(index.len(), 4);
    assert!(TermIndex::new("").is_empty());
    assert!(TermIndex::new("the and of").is_empty());
    assert_eq!(TermIndex::default(), TermIndex::new(""));
}

// term_overlap_score: the plan's tests, translated

#[test]
fn term_overlap_single_match() {
    assert_eq!(score("JWT authentication", "jwt"), Some(1.0));
}

#[test]
fn term_overlap_partial_match() {
    // 1 of 2 terms matched.
    assert_eq!(score("JWT authentication", "jwt debugging"), Some(0.5));
}

#[test]
fn term_overlap_no_match() {
    assert_eq!(score("JWT authentication", "vector embedding"), None);
}

#[test]
fn term_overlap_full_match() {
    assert_eq!(
        score("JWT Token Debugging Session", "jwt debugging"),
        Some(1.0)
    );
    assert_eq!(score("Fixed JWT expiration bug", "jwt bug"), Some(1.0));
}

#[test]
fn term_overlap_is_case_insensitive() {
    assert_eq!(score("jwt authentication", "JWT"), Some(1.0));
    assert_eq!(score("JWT AUTHENTICATION", "Authentication"), Some(1.0));
}

#[test]
fn term_overlap_ignores_stopwords_in_the_query() {
    // The plan's `test_short_terms_filtered`: "the" must not count against "jwt".
    assert_eq!(score("The JWT Token", "the jwt"), Some(1.0));
}

#[test]
fn term_overlap_with_no_terms_is_none() {
    let index = TermIndex::new("JWT authentication");
    assert_eq!(term_overlap_score(&index, &[]), None);
}

#[test]
fn term_overlap_uses_raw_terms_as_given() {
    let index = TermIndex::new("JWT authentication");
    assert_eq!(term_overlap_score(&index, &strings(&["jwt"])), Some(1.0));
    assert_eq!(
        term_overlap_score(&index, &strings(&["jwt", "debugging"])),
        Some(0.5)
    );
}

#[test]
fn term_overlap_matches_whole_terms_only() {
    assert_eq!(score("jwtx", "jwt"), None);
    assert_eq!(score("ajwt", "jwt"), None);
    assert_eq!(score("ajwt jwtx", "jwt"), None);
    assert_eq!(score("ajwtx and jwtauth", "jwt"), None);
    assert_eq!(score("authentication", "auth"), None);
    assert_eq!(score("tokenizer", "token"), None);
    assert_eq!(score("the JWT, token.", "jwt"), Some(1.0));
    assert_eq!(score("(jwt)", "jwt"), Some(1.0));
}

#[test]
fn term_overlap_matches_inflections_and_identifiers() {
    assert_eq!(score("token", "tokens"), Some(1.0));
    assert_eq!(score("Token: abc", "tokens"), Some(1.0));
    assert_eq!(score("call getUserToken()", "tokens"), Some(1.0));
    assert_eq!(score("refresh_jwt_token", "jwt tokens"), Some(1.0));
    assert_eq!(
        score("We decided to rotate keys", "decision? decide"),
        Some(0.5)
    );
    assert_eq!(score("the tokens expired", "token expiring"), Some(1.0));
    assert_eq!(
        score("Fixed the getUserToken JWT bug", "JWT tokens"),
        Some(1.0)
    );
}

#[test]
fn exact_identifier_query_scores_above_scattered_words() {
    let query = query_terms("getUserToken");
    let exact = term_overlap_score(&TermIndex::new("renamed getUserToken"), &query);
    let scattered = term_overlap_score(&TermIndex::new("get the token of a user"), &query);
    assert_eq!(exact, Some(1.0));
    assert_eq!(scattered, Some(0.75));
}

#[test]
fn term_overlap_on_non_ascii_text() {
    assert_eq!(score("Zürich naïve café 東京", "ZÜRICH 東京"), Some(1.0));
    assert_eq!(score("Zürich naïve café 東京", "zurich"), None);
}

#[test]
fn one_index_scores_many_queries() {
    let index = TermIndex::new("Decided to store refresh tokens in Redis with a 15 minute expiry");
    assert_eq!(term_overlap_score(&index, &query_terms("redis")), Some(1.0));
    assert_eq!(
        term_overlap_score(&index, &query_terms("15 minutes")),
        Some(1.0)
    );
    assert_eq!(
        term_overlap_score(&index, &query_terms("stored tokens")),
        Some(1.0)
    );
    assert_eq!(
        term_overlap_score(&index, &query_terms("expiry postgres")),
        Some(0.5)
    );
    assert_eq!(term_overlap_score(&index, &query_terms("postgres")), None);
}

#[test]
fn the_prefilter_keeps_every_text_that_holds_a_term() {
    let cases = [
        ("Why are we dying here?", "die"),
        ("I was lying", "lies"),
        ("using the cache", "use"),
        ("queries were slow", "query"),
        ("the query", "queries"),
        ("rotate refresh_token", "refreshtoken"),
        ("getUserToken()", "tokens"),
        ("It panicked twice", "panic"),
        ("hoping for the best", "hope"),
        ("stopped the worker", "stop"),
        ("Ünïcode Wörter", "wörter"),
    ];
    for (text, query) in cases {
        let terms = query_terms(query);
        let index = TermIndex::new(text);
        assert!(
            terms.iter().any(|t| index.contains(t)),
            "{text:?} holds {query:?}"
        );
        assert!(
            TermPrefilter::new(&terms).may_match(text),
            "{text:?} kept for {query:?}"
        );
    }
    let terms = query_terms("kafka");
    assert!(!TermPrefilter::new(&terms).may_match("postgres connection pool"));
    assert!(!TermPrefilter::new(&[]).may_match("anything"));
}

proptest::proptest! {
    #[test]
    fn the_prefilter_never_rules_out_a_match(
        words in proptest::collection::vec(proptest::sample::select(vec![
            "dying", "die", "lying", "tie", "tying", "using", "used", "use", "queries", "query",
            "queried", "getUserToken", "refresh_token", "refreshToken", "panicked", "panic",
            "hoping", "hope", "stopped", "agreed", "quickly", "tokens", "embeds", "statuses",
            "focused", "menus", "JWT", "jwts", "API", "apis", "café", "naïve", "x", "42",
            "v2", "utf8Decode", "HTTPServer", "alias", "news", "boxes", "flies", "Tokenized",
        ]), 1..8),
        query in proptest::sample::select(vec![
            "die", "lie", "use", "query", "token", "refreshtoken", "panic", "hope", "stop",
            "agree", "quick", "embed", "status", "focus", "menus", "jwt", "api", "café",
            "utf8decode", "server", "alias", "news", "box", "fly", "tokenize", "getusertoken",
        ]),
        separator in proptest::sample::select(vec![" ", "_", "-", ".", "/", "\n"]),
    ) {
        let text = words.join(separator);
        let terms = query_terms(query);
        let index = TermIndex::new(&text);
        if terms.iter().any(|term| index.contains(term)) {
            proptest::prop_assert!(TermPrefilter::new(&terms).may_match(&text), "{text:?} / {query:?}");
        }
    }
}
