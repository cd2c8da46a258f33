//! The one table of hedge words to bands. A claim's band either takes the
//! sentence's own bounds ("less than 1/10", "between 2% and 40%"), or reads
//! its hedge word through this table; where the sentence summarises one of
//! the paper's tables, the default band is widened to contain the paper's
//! own values for that quantity (the suite's self-test proves it does) and
//! the band's source says so. A band is never widened for our numbers, and
//! a sentence whose bounds the paper's own tables break keeps its bounds:
//! the self-test prints the break.

/// Relative half-width of "about X" and its synonyms.
pub const ABOUT: f64 = 0.25;
/// "significant(ly)": a change of at least 10%.
pub const SIGNIFICANT: f64 = 0.10;
/// "much" / "big" / "dramatic": a factor of at least 1.5.
pub const MUCH: f64 = 1.5;
/// "somewhat": a change of 2% to 33%.
pub const SOMEWHAT: (f64, f64) = (0.02, 0.33);
/// "a few percent": 1% to 10%.
pub const A_FEW_PERCENT: (f64, f64) = (0.01, 0.10);
/// "no significant difference" / "as well as": a ratio within ±10%.
pub const SAME: (f64, f64) = (0.90, 1.10);

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Hedge {
    pub words: &'static str,
    pub band: &'static str,
    pub sides: &'static str,
}

/// The table, as `docs/claims.md` prints it.
pub static HEDGES: &[Hedge] = &[
    Hedge {
        words: "about X, approximately X, roughly X, a factor of X, X times",
        band: "X × [0.75, 1.25]; widened to the paper's own table values where the sentence summarises a table",
        sides: "two-sided",
    },
    Hedge {
        words: "about X to Y",
        band: "[0.75 X, 1.25 Y]",
        sides: "two-sided",
    },
    Hedge {
        words: "up to X, as much as X, sometimes as much as X",
        band: "the largest covered cell in X × [0.75, 1.25] (capped at 100% for shares); widened to the paper's own maximum where the sentence summarises a table",
        sides: "two-sided (on the largest cell)",
    },
    Hedge {
        words: "at least X, more than X, less than X, between X and Y",
        band: "the sentence's own bounds",
        sides: "as the sentence",
    },
    Hedge {
        words: "a few percent (\"only a few percent\")",
        band: "[1%, 10%]",
        sides: "two-sided",
    },
    Hedge {
        words: "significant(ly), noticeable",
        band: "a change of at least 10% in the sentence's direction",
        sides: "one-sided, as the sentence",
    },
    Hedge {
        words: "much, big, dramatic",
        band: "a factor of at least 1.5 in the sentence's direction",
        sides: "one-sided, as the sentence",
    },
    Hedge {
        words: "somewhat",
        band: "a change of 2% to 33% in the sentence's direction",
        sides: "two-sided",
    },
    Hedge {
        words: "no significant difference, as well as",
        band: "a ratio in [0.90, 1.10]",
        sides: "two-sided",
    },
    Hedge {
        words: "a bare direction (faster, fewer, higher, worse, helped, in between)",
        band: "the ratio on the sentence's side of 1 (or the difference on its side of 0)",
        sides: "one-sided",
    },
    Hedge {
        words: "very (\"very significant\")",
        band: "no band of its own: it intensifies the word it qualifies, whose band applies (\"very significant\" = significant)",
        sides: "-",
    },
    Hedge {
        words: "only",
        band: "no band of its own: it marks the value as small; the number or hedge it qualifies sets the band",
        sides: "-",
    },
];

/// The default source strings, one per hedge (claims cite them).
pub mod source {
    pub const ABOUT: &str = "hedge table: about X = X × [0.75, 1.25]";
    pub const SENTENCE: &str = "the sentence's own bounds";
    pub const DIRECTION: &str = "hedge table: a bare direction";
    pub const SIGNIFICANT: &str = "hedge table: significant = at least 10%";
    pub const MUCH: &str = "hedge table: much/big = a factor of at least 1.5";
    pub const SOMEWHAT: &str = "hedge table: somewhat = 2% to 33%";
    pub const A_FEW: &str = "hedge table: a few percent = 1% to 10%";
    pub const SAME: &str = "hedge table: no significant difference = ratio 0.90-1.10";
}

/// `x × [0.75, 1.25]`.
pub const fn about(x: f64) -> (f64, f64) {
    (x * (1.0 - ABOUT), x * (1.0 + ABOUT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_is_symmetric_and_relative() {
        let (lo, hi) = about(0.6);
        assert!((lo - 0.45).abs() < 1e-12 && (hi - 0.75).abs() < 1e-12);
        assert!(HEDGES.iter().any(|h| h.words.contains("a few percent")));
    }
}
