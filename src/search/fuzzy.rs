//! Fuzzy matching of names (skim's algorithm, as fzf users expect).

use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;

/// A fuzzy matcher with smart case: lowercase patterns ignore case, mixed case respects it.
pub struct Fuzzy(SkimMatcherV2);

impl Default for Fuzzy {
    fn default() -> Self {
        Fuzzy(SkimMatcherV2::default().smart_case())
    }
}

impl std::fmt::Debug for Fuzzy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fuzzy")
    }
}

impl Fuzzy {
    pub fn score(&self, choice: &str, pattern: &str) -> Option<i64> {
        if pattern.is_empty() {
            return Some(0);
        }
        self.0.fuzzy_match(choice, pattern)
    }

    /// Character indices of `choice` that the pattern matched, for highlighting.
    pub fn indices(&self, choice: &str, pattern: &str) -> Vec<usize> {
        if pattern.is_empty() {
            return Vec::new();
        }
        self.0
            .fuzzy_indices(choice, pattern)
            .map(|(_, i)| i)
            .unwrap_or_default()
    }
}

/// Case-insensitive substring test; `needle_lower` must already be lowercase.
pub fn contains_ci(hay: &str, needle_lower: &str) -> bool {
    if needle_lower.is_empty() {
        return true;
    }
    if needle_lower.is_ascii() {
        let n = needle_lower.as_bytes();
        return hay
            .as_bytes()
            .windows(n.len())
            .any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_lowercase() == *b));
    }
    hay.to_lowercase().contains(needle_lower)
}

/// Byte ranges of the case-insensitive occurrences of `needle_lower` in `hay` (ASCII needles
/// only: other needles are not highlighted, since lowercasing may change byte offsets).
pub fn find_ci(hay: &str, needle_lower: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    if needle_lower.is_empty() || !needle_lower.is_ascii() {
        return out;
    }
    let n = needle_lower.as_bytes();
    let h = hay.as_bytes();
    let mut i = 0;
    while i + n.len() <= h.len() {
        if h[i..i + n.len()]
            .iter()
            .zip(n)
            .all(|(a, b)| a.to_ascii_lowercase() == *b)
        {
            out.push((i, i + n.len()));
            i += n.len();
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_matches_subsequences_and_reports_indices() {
        let f = Fuzzy::default();
        assert!(f.score("search_web", "srch").is_some());
        assert!(f.score("search_web", "xyz").is_none());
        assert_eq!(f.indices("search", "sea"), vec![0, 1, 2]);
        assert!(f.score("Search", "search").is_some(), "lowercase pattern ignores case");
    }

    #[test]
    fn case_insensitive_search() {
        assert!(contains_ci("Hello World", "world"));
        assert!(!contains_ci("Hello", "xyz"));
        assert!(contains_ci("ÉCOLE", "école"));
        assert_eq!(find_ci("aXa xa", "xa"), vec![(1, 3), (4, 6)]);
    }
}
