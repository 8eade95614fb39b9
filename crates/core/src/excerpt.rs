//! User text quoted in error messages, cut short: a 100 KB name or number
//! must not become a 100 KB message (spec and unit errors both quote this way).

/// The most a message quotes of one piece of user text.
pub const EXCERPT_CHARS: usize = 80;

/// `text` quoted, cut to its first [`EXCERPT_CHARS`] characters (saying how
/// long it was) when longer.
pub fn excerpt(text: &str) -> String {
    match head(text) {
        (all, false) => format!("{all:?}"),
        (head, true) => format!("{head:?}… ({} bytes)", text.len()),
    }
}

/// [`excerpt`] without the quotes.
pub fn clip(text: &str) -> String {
    match head(text) {
        (all, false) => all.to_string(),
        (head, true) => format!("{head}… ({} bytes)", text.len()),
    }
}

/// `text`'s first [`EXCERPT_CHARS`] characters, and whether it had more.
pub fn head(text: &str) -> (&str, bool) {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => (text, false),
        Some((cut, _)) => (&text[..cut], true),
    }
}
