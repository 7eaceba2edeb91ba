//! Token estimates: four characters to a token (ARCHITECTURE §2), used to keep replies
//! and prompts inside a caller's `token_budget`.

/// Characters per token in every estimate of the workspace: the usual rule of thumb for
/// English text with GPT-style tokenizers, close enough for budgeting.
pub const CHARS_PER_TOKEN: usize = 4;

/// The estimated number of tokens of a text of `num_chars` characters: `num_chars / 4`
/// rounded up, and at least 1.
///
/// Rounding up and the floor of 1 keep estimates conservative: a sum of estimates never
/// undercounts the texts it covers, and an empty item still costs something in a reply.
#[must_use]
pub fn estimate_tokens(num_chars: usize) -> usize {
    num_chars.div_ceil(CHARS_PER_TOKEN).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_tokens_rounds_up_and_is_at_least_one() {
        assert_eq!(estimate_tokens(0), 1);
        assert_eq!(estimate_tokens(1), 1);
        assert_eq!(estimate_tokens(4), 1);
        assert_eq!(estimate_tokens(5), 2);
        assert_eq!(estimate_tokens(400), 100);
    }
}
