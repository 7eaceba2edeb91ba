//! Time hints in natural-language questions: "what did we decide about JWT last week?"
//! → the range and TOC node of last week, and the question without the phrase.
//!
//! The navigator starts at the hinted node instead of the root, and the search filters
//! on the range; the remainder is what is left to match against content. Questions are
//! free text typed by people and agents, so this never fails: anything not understood
//! is simply not a hint (ARCHITECTURE §6: natural language must never fail to parse).
//!
//! Understood, case-insensitively, anywhere in the text (the first one wins):
//! - `today`, `tonight`, `this morning|afternoon|evening`, `yesterday`, `last night`,
//!   `the day before yesterday`;
//! - `this|last|previous week|month|year` (`last week` is the previous ISO week, not
//!   the last seven days);
//! - `N minutes|hours|days|weeks|months|years ago`, N in digits, `a`/`an`, or `one` to
//!   `twelve`: the day, week, month or year that holds that moment;
//! - `last <month name>`: the most recent such month before the current one;
//! - weekday names: `monday`, `on monday`, `last monday` are the most recent such day
//!   before today; `this monday` is the one in the current week if it is not in the
//!   future;
//! - month names and abbreviations: `in January`, `in jan`, `January 2025`, `March`
//!   (the most recent such month that has begun); dates `2026-01-30`, `30 January
//!   2026`, `30th of January`, `January 30`, `Jan 30th, 2026` (without a year: the most
//!   recent such date that is not in the future); an ISO month `2026-01`;
//! - `in|during|since <year>` for a year from 1970 up to the current one.
//!
//! Words that are also ordinary English or code words (`may`, `march`, and every
//! abbreviation such as `dec` or `sep`) count as months only after `in`, `during` or
//! `since`, or next to a day number or a year. A leading `in`, `on`, `during`, `since`,
//! `from`, `over` and `the` become part of the matched phrase, so they leave the
//! remainder too. `since X` is read as X itself: the node to start from.

use chrono::{DateTime, Datelike, NaiveDate, TimeDelta, Utc, Weekday};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use crate::calendar;
use crate::node_id::TocNodeId;

/// A time phrase found in a query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeHint {
    /// Start of the range, inclusive: `node`'s start in the query's time zone.
    pub from: DateTime<Utc>,
    /// End of the range, exclusive.
    pub to: DateTime<Utc>,
    /// The narrowest TOC node covering the range: a day for a date or "yesterday", a
    /// week for "last week", a month for "in January", a year for "last year".
    pub node: TocNodeId,
    /// The phrase as written in the query (original case), e.g. `in January`.
    pub matched: String,
    /// The query without the phrase, whitespace collapsed to single spaces.
    pub remainder: String,
}

/// Finds the first time phrase in `query`, relative to `now` with day boundaries in
/// `tz`, and returns its range and node; `None` when there is none.
///
/// Total: never panics, whatever the input. A `now` outside the supported years
/// (1..=9999) yields `None`.
#[must_use]
pub fn parse_time_hint(query: &str, now: DateTime<Utc>, tz: Tz) -> Option<TimeHint> {
    let clock = Clock::new(now, tz)?;
    let tokens = tokenize(query);
    (0..tokens.len()).find_map(|start_index| {
        let phrase = match_phrase_at(&tokens, start_index, &clock)?;
        let (from, to) = phrase.node.try_start_end(tz).ok()?;
        let first_token = tokens.get(start_index)?;
        let last_token = tokens.get(start_index + phrase.num_tokens.checked_sub(1)?)?;
        let matched = query.get(first_token.start..last_token.end)?;
        Some(TimeHint {
            from,
            to,
            node: phrase.node,
            matched: matched.to_string(),
            remainder: remove_phrase(query, first_token.start, last_token.end),
        })
    })
}

/// The reference point of relative phrases.
struct Clock {
    now: DateTime<Utc>,
    today: NaiveDate,
    tz: Tz,
}

impl Clock {
    /// `None` when `now` lies outside the supported years: the phrases would name
    /// periods no node can have, and chrono panics converting instants at the very edge
    /// of its range to local time.
    fn new(now: DateTime<Utc>, tz: Tz) -> Option<Clock> {
        let first_instant = NaiveDate::from_ymd_opt(calendar::FIRST_SUPPORTED_YEAR, 1, 2)?
            .and_hms_opt(0, 0, 0)?
            .and_utc();
        let last_instant = NaiveDate::from_ymd_opt(calendar::LAST_SUPPORTED_YEAR, 12, 30)?
            .and_hms_opt(0, 0, 0)?
            .and_utc();
        if now < first_instant || now > last_instant {
            return None;
        }
        Some(Clock {
            now,
            today: calendar::day_of_instant(now, tz),
            tz,
        })
    }
}

/// A word of the query with its byte span in the original text.
struct Token {
    /// Byte offset of the first character.
    start: usize,
    /// Byte offset just past the last character.
    end: usize,
    /// Lowercased, with a possessive `'s` removed (`Yesterday's` → `yesterday`).
    word: String,
}

/// Splits `query` into words: runs of alphanumeric characters, also joining `-`
/// between digits (`2026-01-30`) and an apostrophe between letters (`today's`).
fn tokenize(query: &str) -> Vec<Token> {
    let characters: Vec<(usize, char)> = query.char_indices().collect();
    let mut tokens = Vec::new();
    let mut token_start_opt: Option<usize> = None;
    for (position, &(byte_offset, character)) in characters.iter().enumerate() {
        let previous_opt = position
            .checked_sub(1)
            .and_then(|index| characters.get(index))
            .map(|&(_, c)| c);
        let next_opt = characters.get(position + 1).map(|&(_, c)| c);
        let joins_digits = character == '-'
            && previous_opt.is_some_and(|c| c.is_ascii_digit())
            && next_opt.is_some_and(|c| c.is_ascii_digit());
        let joins_letters = (character == '\'' || character == '\u{2019}')
            && previous_opt.is_some_and(char::is_alphabetic)
            && next_opt.is_some_and(char::is_alphabetic);
        let is_word_character = character.is_alphanumeric()
            || (token_start_opt.is_some() && (joins_digits || joins_letters));
        match (is_word_character, token_start_opt) {
            (true, None) => token_start_opt = Some(byte_offset),
            (false, Some(token_start)) => {
                tokens.push(make_token(query, token_start, byte_offset));
                token_start_opt = None;
            }
            _ => {}
        }
    }
    if let Some(token_start) = token_start_opt {
        tokens.push(make_token(query, token_start, query.len()));
    }
    tokens
}

fn make_token(query: &str, start: usize, end: usize) -> Token {
    let lowercase = query[start..end].to_lowercase();
    let word = lowercase
        .strip_suffix("'s")
        .or_else(|| lowercase.strip_suffix("\u{2019}s"))
        .map_or_else(|| lowercase.clone(), str::to_string);
    Token { start, end, word }
}

/// The query with bytes `start..end` cut out, whitespace collapsed, and no stray
/// separator left at the start (`Yesterday, we…` → `we…`) or before a closing mark
/// (`…expiry last week?` → `…expiry?`).
fn remove_phrase(query: &str, start: usize, end: usize) -> String {
    let before = query.get(..start).unwrap_or_default().trim_end();
    let after = query.get(end..).unwrap_or_default().trim_start();
    let glued_to_previous_word = after.starts_with([',', '.', ';', ':', '!', '?', ')']);
    let joined = if before.is_empty() || after.is_empty() || glued_to_previous_word {
        format!("{before}{after}")
    } else {
        format!("{before} {after}")
    };
    let collapsed = joined.split_whitespace().collect::<Vec<&str>>().join(" ");
    collapsed
        .trim_start_matches(|c: char| ",.;:!?".contains(c) || c.is_whitespace())
        .to_string()
}

/// A phrase recognised at some token: how many tokens it spans and what it names.
struct PhraseMatch {
    num_tokens: usize,
    node: TocNodeId,
}

/// Words that may lead a time phrase and then belong to it.
const LEADING_PREPOSITIONS: [&str; 6] = ["in", "on", "during", "since", "from", "over"];

/// Prepositions after which `may`, `march` or `dec` are months, and a bare number a year.
const PERIOD_PREPOSITIONS: [&str; 3] = ["in", "during", "since"];

/// Tries `[preposition] [the] <phrase>` starting at token `index`.
fn match_phrase_at(tokens: &[Token], index: usize, clock: &Clock) -> Option<PhraseMatch> {
    let word_at = |position: usize| tokens.get(position).map(|token| token.word.as_str());
    let first_word = word_at(index)?;
    let preposition_opt = LEADING_PREPOSITIONS
        .into_iter()
        .find(|&preposition| preposition == first_word);
    let mut core_index = index;
    if preposition_opt.is_some() {
        core_index += 1;
    }
    if word_at(core_index) == Some("the") {
        core_index += 1;
    }
    if core_index == index {
        return match_core(tokens, index, clock, None);
    }
    let core = match_core(tokens, core_index, clock, preposition_opt)?;
    Some(PhraseMatch {
        num_tokens: core_index - index + core.num_tokens,
        node: core.node,
    })
}

/// The phrase proper, most specific form first.
fn match_core(
    tokens: &[Token],
    index: usize,
    clock: &Clock,
    preposition_opt: Option<&str>,
) -> Option<PhraseMatch> {
    match_named_day(tokens, index, clock)
        .or_else(|| match_this_or_last(tokens, index, clock))
        .or_else(|| match_ago(tokens, index, clock))
        .or_else(|| match_iso_date(tokens, index))
        .or_else(|| match_month_name_forms(tokens, index, clock, preposition_opt))
        .or_else(|| match_weekday(tokens, index, clock))
        .or_else(|| match_year_after_preposition(tokens, index, clock, preposition_opt))
}

fn word_at(tokens: &[Token], index: usize) -> Option<&str> {
    tokens.get(index).map(|token| token.word.as_str())
}

fn day_match(num_tokens: usize, day_opt: Option<NaiveDate>) -> Option<PhraseMatch> {
    Some(PhraseMatch {
        num_tokens,
        node: TocNodeId::Day(day_opt?),
    })
}

fn week_node(day: NaiveDate) -> TocNodeId {
    let (iso_year, week) = calendar::week_of(day);
    TocNodeId::Week { iso_year, week }
}

/// `today`, `tonight`, `yesterday`, `day before yesterday`.
fn match_named_day(tokens: &[Token], index: usize, clock: &Clock) -> Option<PhraseMatch> {
    match word_at(tokens, index)? {
        "today" | "tonight" => day_match(1, Some(clock.today)),
        "yesterday" => day_match(1, clock.today.pred_opt()),
        "day"
            if word_at(tokens, index + 1) == Some("before")
                && word_at(tokens, index + 2) == Some("yesterday") =>
        {
            day_match(3, calendar::subtract_days(clock.today, 2).ok())
        }
        _ => None,
    }
}

/// `this|last|previous` followed by a period, a weekday, or a part of the day.
fn match_this_or_last(tokens: &[Token], index: usize, clock: &Clock) -> Option<PhraseMatch> {
    let is_this = match word_at(tokens, index)? {
        "this" => true,
        "last" | "previous" => false,
        _ => return None,
    };
    let period_word = word_at(tokens, index + 1)?;
    let today = clock.today;
    let node = match (is_this, period_word) {
        (true, "week") => week_node(today),
        (false, "week") => week_node(calendar::subtract_days(today, 7).ok()?),
        (true, "month") => TocNodeId::Month {
            year: today.year(),
            month: today.month(),
        },
        (false, "month") => TocNodeId::Month {
            year: today.year(),
            month: today.month(),
        }
        .previous()?,
        (true, "year") => TocNodeId::Year(today.year()),
        (false, "year") => TocNodeId::Year(today.year().checked_sub(1)?),
        (true, "morning" | "afternoon" | "evening") => TocNodeId::Day(today),
        (false, "night") => TocNodeId::Day(today.pred_opt()?),
        (true, weekday_word) => TocNodeId::Day(this_weekday(full_weekday(weekday_word)?, today)?),
        (false, other_word) => {
            if let Some((month, _)) = month_word(other_word) {
                most_recent_month_before_this_one(month, today)?
            } else {
                let weekday =
                    full_weekday(other_word).or_else(|| abbreviated_weekday(other_word))?;
                TocNodeId::Day(most_recent_past_weekday(weekday, today)?)
            }
        }
    };
    Some(PhraseMatch {
        num_tokens: 2,
        node,
    })
}

/// `last <month>`: the most recent such month before the current one.
fn most_recent_month_before_this_one(month: u32, today: NaiveDate) -> Option<TocNodeId> {
    let year = if month < today.month() {
        today.year()
    } else {
        today.year().checked_sub(1)?
    };
    let node = TocNodeId::Month { year, month };
    node.validate().ok()?;
    Some(node)
}

/// `N <unit> ago`.
fn match_ago(tokens: &[Token], index: usize, clock: &Clock) -> Option<PhraseMatch> {
    let count = count_word(word_at(tokens, index)?)?;
    let unit = word_at(tokens, index + 1)?;
    if word_at(tokens, index + 2) != Some("ago") {
        return None;
    }
    let today = clock.today;
    let node = match unit {
        "minute" | "minutes" | "min" | "mins" => {
            let instant = clock
                .now
                .checked_sub_signed(TimeDelta::try_minutes(i64::from(count))?)?;
            TocNodeId::Day(calendar::day_of_instant(instant, clock.tz))
        }
        "hour" | "hours" => {
            let instant = clock
                .now
                .checked_sub_signed(TimeDelta::try_hours(i64::from(count))?)?;
            TocNodeId::Day(calendar::day_of_instant(instant, clock.tz))
        }
        "day" | "days" => TocNodeId::Day(calendar::subtract_days(today, u64::from(count)).ok()?),
        "week" | "weeks" => week_node(calendar::subtract_days(today, u64::from(count) * 7).ok()?),
        "month" | "months" => {
            let month_index =
                i64::from(today.year()) * 12 + i64::from(today.month0()) - i64::from(count);
            TocNodeId::Month {
                year: i32::try_from(month_index.div_euclid(12)).ok()?,
                month: u32::try_from(month_index.rem_euclid(12) + 1).ok()?,
            }
        }
        "year" | "years" => TocNodeId::Year(today.year().checked_sub(i32::try_from(count).ok()?)?),
        _ => return None,
    };
    node.validate().ok()?;
    Some(PhraseMatch {
        num_tokens: 3,
        node,
    })
}

/// `2026-01-30` (a day) or `2026-01` (a month).
fn match_iso_date(tokens: &[Token], index: usize) -> Option<PhraseMatch> {
    let word = word_at(tokens, index)?;
    let fields: Vec<&str> = word.split('-').collect();
    let all_digits = |text: &str, length: usize| {
        text.len() == length && text.bytes().all(|byte| byte.is_ascii_digit())
    };
    let node = match fields.as_slice() {
        [year, month, day] if all_digits(year, 4) && all_digits(month, 2) && all_digits(day, 2) => {
            TocNodeId::Day(NaiveDate::from_ymd_opt(
                year.parse().ok()?,
                month.parse().ok()?,
                day.parse().ok()?,
            )?)
        }
        [year, month] if all_digits(year, 4) && all_digits(month, 2) => TocNodeId::Month {
            year: year.parse().ok()?,
            month: month.parse().ok()?,
        },
        _ => return None,
    };
    node.validate().ok()?;
    Some(PhraseMatch {
        num_tokens: 1,
        node,
    })
}

/// Dates and months written with a month name: `30 January 2026`, `30th of jan`,
/// `January 30`, `Jan 30th 2026`, `January 2025`, `in January`.
fn match_month_name_forms(
    tokens: &[Token],
    index: usize,
    clock: &Clock,
    preposition_opt: Option<&str>,
) -> Option<PhraseMatch> {
    let first_word = word_at(tokens, index)?;
    // Day first. A bare number is weak context for a word like `may` ("version 2 may
    // break"), so those also need `of`, an ordinal, a year, or a leading preposition.
    if let Some(day_of_month) = day_number(first_word) {
        let has_of = word_at(tokens, index + 1) == Some("of");
        let month_index = if has_of { index + 2 } else { index + 1 };
        let (month, needs_context) = month_word(word_at(tokens, month_index)?)?;
        let year_opt = word_at(tokens, month_index + 1).and_then(year_number);
        let has_ordinal_suffix =
            first_word.ends_with(|character: char| character.is_ascii_alphabetic());
        let has_context =
            has_of || has_ordinal_suffix || year_opt.is_some() || preposition_opt.is_some();
        if needs_context && !has_context {
            return None;
        }
        if let Some(year) = year_opt {
            return day_match(
                month_index + 2 - index,
                NaiveDate::from_ymd_opt(year, month, day_of_month),
            );
        }
        return day_match(
            month_index + 1 - index,
            most_recent_date(month, day_of_month, clock.today),
        );
    }
    let (month, needs_context) = month_word(first_word)?;
    let second_word_opt = word_at(tokens, index + 1);
    if let Some(day_of_month) = second_word_opt.and_then(day_number) {
        if let Some(year) = word_at(tokens, index + 2).and_then(year_number) {
            return day_match(3, NaiveDate::from_ymd_opt(year, month, day_of_month));
        }
        return day_match(2, most_recent_date(month, day_of_month, clock.today));
    }
    if let Some(year) = second_word_opt.and_then(year_number) {
        let node = TocNodeId::Month { year, month };
        node.validate().ok()?;
        return Some(PhraseMatch {
            num_tokens: 2,
            node,
        });
    }
    let has_period_preposition =
        preposition_opt.is_some_and(|preposition| PERIOD_PREPOSITIONS.contains(&preposition));
    if needs_context && !has_period_preposition {
        return None;
    }
    let year = if month <= clock.today.month() {
        clock.today.year()
    } else {
        clock.today.year().checked_sub(1)?
    };
    let node = TocNodeId::Month { year, month };
    node.validate().ok()?;
    Some(PhraseMatch {
        num_tokens: 1,
        node,
    })
}

/// A bare full weekday name (`monday`, `on monday`): the most recent such day before
/// today.
fn match_weekday(tokens: &[Token], index: usize, clock: &Clock) -> Option<PhraseMatch> {
    let weekday = full_weekday(word_at(tokens, index)?)?;
    day_match(1, most_recent_past_weekday(weekday, clock.today))
}

/// `in 2025`, `during 2025`, `since 2025`: a year from 1970 to the current one (later
/// or earlier numbers after `in` are far more often amounts: "in 4096 bytes").
fn match_year_after_preposition(
    tokens: &[Token],
    index: usize,
    clock: &Clock,
    preposition_opt: Option<&str>,
) -> Option<PhraseMatch> {
    if !preposition_opt.is_some_and(|preposition| PERIOD_PREPOSITIONS.contains(&preposition)) {
        return None;
    }
    let year = year_number(word_at(tokens, index)?)?;
    if !(1970..=clock.today.year()).contains(&year) {
        return None;
    }
    Some(PhraseMatch {
        num_tokens: 1,
        node: TocNodeId::Year(year),
    })
}

/// The month a word names, and whether it needs context to count as one (it is also
/// an ordinary word or a common code abbreviation: `may`, `march`, `dec`, `sep`…).
fn month_word(word: &str) -> Option<(u32, bool)> {
    let full_names = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    if let Some(position) = full_names.iter().position(|&name| name == word) {
        let needs_context = matches!(word, "may" | "march");
        return Some((u32::try_from(position).ok()? + 1, needs_context));
    }
    let month = match word {
        "jan" => 1,
        "feb" => 2,
        "mar" => 3,
        "apr" => 4,
        "jun" => 6,
        "jul" => 7,
        "aug" => 8,
        "sep" | "sept" => 9,
        "oct" => 10,
        "nov" => 11,
        "dec" => 12,
        _ => return None,
    };
    Some((month, true))
}

fn full_weekday(word: &str) -> Option<Weekday> {
    match word {
        "monday" => Some(Weekday::Mon),
        "tuesday" => Some(Weekday::Tue),
        "wednesday" => Some(Weekday::Wed),
        "thursday" => Some(Weekday::Thu),
        "friday" => Some(Weekday::Fri),
        "saturday" => Some(Weekday::Sat),
        "sunday" => Some(Weekday::Sun),
        _ => None,
    }
}

/// Abbreviations, accepted only after `last` (alone, `sat`, `sun` and `wed` are words).
fn abbreviated_weekday(word: &str) -> Option<Weekday> {
    match word {
        "mon" => Some(Weekday::Mon),
        "tue" | "tues" => Some(Weekday::Tue),
        "wed" => Some(Weekday::Wed),
        "thu" | "thur" | "thurs" => Some(Weekday::Thu),
        "fri" => Some(Weekday::Fri),
        "sat" => Some(Weekday::Sat),
        "sun" => Some(Weekday::Sun),
        _ => None,
    }
}

/// The most recent `weekday` strictly before `today` (one to seven days back).
fn most_recent_past_weekday(weekday: Weekday, today: NaiveDate) -> Option<NaiveDate> {
    let days_back =
        (7 + today.weekday().num_days_from_monday() - weekday.num_days_from_monday()) % 7;
    let days_back_at_least_one = if days_back == 0 { 7 } else { days_back };
    calendar::subtract_days(today, u64::from(days_back_at_least_one)).ok()
}

/// `weekday` of the current ISO week if that is today or earlier, else the most recent
/// past one: memory is about the past.
fn this_weekday(weekday: Weekday, today: NaiveDate) -> Option<NaiveDate> {
    let today_from_monday = today.weekday().num_days_from_monday();
    let target_from_monday = weekday.num_days_from_monday();
    if target_from_monday <= today_from_monday {
        calendar::subtract_days(today, u64::from(today_from_monday - target_from_monday)).ok()
    } else {
        most_recent_past_weekday(weekday, today)
    }
}

/// The most recent `month`-`day_of_month` that is not after `today` (looking back up
/// to eight years, so February 29 finds the last leap year).
fn most_recent_date(month: u32, day_of_month: u32, today: NaiveDate) -> Option<NaiveDate> {
    (0..=8).find_map(|num_years_back| {
        let year = today.year().checked_sub(num_years_back)?;
        NaiveDate::from_ymd_opt(year, month, day_of_month).filter(|&date| date <= today)
    })
}

/// A count before a unit: digits (up to 1 000 000), `a`/`an`, or `one` to `twelve`.
fn count_word(word: &str) -> Option<u32> {
    const NUMBER_WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    if word == "a" || word == "an" {
        return Some(1);
    }
    if let Some(position) = NUMBER_WORDS
        .iter()
        .position(|&number_word| number_word == word)
    {
        return u32::try_from(position).ok().map(|index| index + 1);
    }
    if word.is_empty() || word.len() > 7 || !word.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

/// A day of the month: `5`, `05`, `5th`, `21st`, `22nd`, `23rd` (1..=31).
fn day_number(word: &str) -> Option<u32> {
    let digits = ["st", "nd", "rd", "th"]
        .into_iter()
        .find_map(|suffix| word.strip_suffix(suffix))
        .unwrap_or(word);
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let day_of_month: u32 = digits.parse().ok()?;
    (1..=31).contains(&day_of_month).then_some(day_of_month)
}

/// A four-digit year.
fn year_number(word: &str) -> Option<i32> {
    if word.len() != 4 || !word.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    word.parse().ok()
}

#[cfg(test)]
#[path = "time_hint_tests.rs"]
mod tests;
