//! Byte ranges (RFC 9110 §14), with Apache httpd's defences against range
//! abuse (CVE-2011-3192, "Apache Killer"): httpd 2.4's `MaxRanges 200`,
//! `MaxRangeOverlaps 20` and `MaxRangeReversals 20`, and httpd 2.2's rule that
//! ranges adding up to more than the representation are ignored. A refused
//! Range header is *ignored* (200 with the whole representation), exactly as
//! httpd does; only a syntactically valid set with no satisfiable range gets 416.

/// Most ranges accepted in one header (httpd `MaxRanges` default).
pub const MAX_RANGES: usize = 200;
/// Most ranges that overlap or touch an earlier one (httpd `MaxRangeOverlaps`).
pub const MAX_OVERLAPS: usize = 20;
/// Most ranges starting before the previous one (httpd `MaxRangeReversals`).
pub const MAX_REVERSALS: usize = 20;

/// One satisfiable range, inclusive bounds, as in Content-Range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    pub first: u64,
    pub last: u64,
}

impl ByteRange {
    pub fn len(&self) -> u64 {
        self.last - self.first + 1
    }
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// What to do with a Range header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeOutcome {
    /// Ignore it and send 200 (bad syntax, other unit, refused as abusive).
    Ignore,
    /// 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
    /// 206; one range, or several for multipart/byteranges, in request order
    /// after merging overlapping and adjacent ones.
    Ranges(Vec<ByteRange>),
}

/// Parses `value` against a representation of `len` bytes.
pub fn evaluate(value: &[u8], len: u64) -> RangeOutcome {
    let Ok(value) = std::str::from_utf8(value) else {
        return RangeOutcome::Ignore;
    };
    let value = value.trim();
    let Some((unit, set)) = value.split_once('=') else {
        return RangeOutcome::Ignore;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return RangeOutcome::Ignore;
    }
    let mut ranges: Vec<ByteRange> = Vec::new();
    let mut sum: u64 = 0;
    let mut count = 0usize;
    for spec in set.split(',') {
        let spec = spec.trim();
        if spec.is_empty() {
            // RFC 9110 §5.6.1: empty list elements are allowed and ignored.
            continue;
        }
        count += 1;
        if count > MAX_RANGES {
            return RangeOutcome::Ignore;
        }
        let Some((a, b)) = spec.split_once('-') else {
            return RangeOutcome::Ignore;
        };
        let (a, b) = (a.trim(), b.trim());
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        let range = if a.is_empty() {
            // suffix-range: the last N bytes
            if !digits(b) {
                return RangeOutcome::Ignore;
            }
            let Ok(n) = b.parse::<u64>() else {
                return RangeOutcome::Ignore;
            };
            if n == 0 || len == 0 {
                continue; // unsatisfiable
            }
            ByteRange {
                first: len.saturating_sub(n),
                last: len - 1,
            }
        } else {
            if !digits(a) || !(b.is_empty() || digits(b)) {
                return RangeOutcome::Ignore;
            }
            let Ok(first) = a.parse::<u64>() else {
                // Larger than u64: certainly beyond the end.
                continue;
            };
            let last = if b.is_empty() {
                u64::MAX
            } else {
                // More digits than u64 holds: beyond any end, clamped below.
                b.parse::<u64>().unwrap_or(u64::MAX)
            };
            if last < first {
                // RFC 9110 §14.1.1: invalid range-spec makes the set invalid.
                return RangeOutcome::Ignore;
            }
            if first >= len {
                continue; // unsatisfiable
            }
            ByteRange {
                first,
                last: last.min(len - 1),
            }
        };
        sum = sum.saturating_add(range.len());
        ranges.push(range);
    }
    if count == 0 {
        return RangeOutcome::Ignore;
    }
    if ranges.is_empty() {
        return RangeOutcome::Unsatisfiable;
    }
    // httpd 2.2 refused any set whose lengths add up to more than the file;
    // 2.4 merges first and counts overlaps. We do as 2.4, then apply 2.2's
    // rule to what is left (checked below), which is then only reachable
    // through many small overlaps already counted.
    let _ = sum;
    // Merge ranges overlapping or touching the previous kept one, counting
    // overlaps and reversals like httpd 2.4.
    let mut overlaps = 0;
    let mut reversals = 0;
    let mut merged: Vec<ByteRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        if let Some(prev) = merged.last_mut() {
            let touches =
                r.first <= prev.last.saturating_add(1) && r.last.saturating_add(1) >= prev.first;
            if touches {
                overlaps += 1;
                prev.first = prev.first.min(r.first);
                prev.last = prev.last.max(r.last);
                continue;
            }
            if r.first < prev.first {
                reversals += 1;
            }
        }
        merged.push(r);
    }
    if overlaps > MAX_OVERLAPS || reversals > MAX_REVERSALS {
        return RangeOutcome::Ignore;
    }
    let merged_sum: u64 = merged.iter().map(ByteRange::len).sum();
    if merged.len() > 1 && merged_sum > len {
        return RangeOutcome::Ignore;
    }
    RangeOutcome::Ranges(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(first: u64, last: u64) -> ByteRange {
        ByteRange { first, last }
    }

    #[test]
    fn single_and_suffix() {
        assert_eq!(
            evaluate(b"bytes=0-9", 100),
            RangeOutcome::Ranges(vec![r(0, 9)])
        );
        assert_eq!(
            evaluate(b"bytes=90-", 100),
            RangeOutcome::Ranges(vec![r(90, 99)])
        );
        assert_eq!(
            evaluate(b"bytes=-10", 100),
            RangeOutcome::Ranges(vec![r(90, 99)])
        );
        assert_eq!(
            evaluate(b"bytes=-1000", 100),
            RangeOutcome::Ranges(vec![r(0, 99)])
        );
        assert_eq!(
            evaluate(b"bytes=50-1000", 100),
            RangeOutcome::Ranges(vec![r(50, 99)])
        );
        assert_eq!(
            evaluate(b"Bytes = 1-2", 100),
            RangeOutcome::Ranges(vec![r(1, 2)])
        );
    }

    #[test]
    fn unsatisfiable_and_invalid() {
        assert_eq!(evaluate(b"bytes=100-", 100), RangeOutcome::Unsatisfiable);
        assert_eq!(evaluate(b"bytes=-0", 100), RangeOutcome::Unsatisfiable);
        assert_eq!(evaluate(b"bytes=0-0", 0), RangeOutcome::Unsatisfiable);
        assert_eq!(evaluate(b"bytes=5-1", 100), RangeOutcome::Ignore);
        assert_eq!(evaluate(b"items=0-1", 100), RangeOutcome::Ignore);
        assert_eq!(evaluate(b"bytes=a-b", 100), RangeOutcome::Ignore);
        assert_eq!(evaluate(b"bytes=", 100), RangeOutcome::Ignore);
        assert_eq!(evaluate(b"bytes=+1-2", 100), RangeOutcome::Ignore);
        assert_eq!(
            evaluate(b"bytes=99999999999999999999999-", 100),
            RangeOutcome::Unsatisfiable
        );
    }

    #[test]
    fn multiple_merged_and_abuse_refused() {
        assert_eq!(
            evaluate(b"bytes=0-9, 20-29", 100),
            RangeOutcome::Ranges(vec![r(0, 9), r(20, 29)])
        );
        assert_eq!(
            evaluate(b"bytes=0-9,5-19,20-29", 100),
            RangeOutcome::Ranges(vec![r(0, 29)])
        );
        assert_eq!(
            evaluate(b"bytes=0-9,200-300", 100),
            RangeOutcome::Ranges(vec![r(0, 9)])
        );
        let many: String = format!(
            "bytes={}",
            (0..201)
                .map(|i| format!("{}-{}", i * 2, i * 2))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(evaluate(many.as_bytes(), 10_000), RangeOutcome::Ignore);
        let overlapping: String = format!(
            "bytes={}",
            (0..30).map(|_| "0-50").collect::<Vec<_>>().join(",")
        );
        assert_eq!(evaluate(overlapping.as_bytes(), 100), RangeOutcome::Ignore);
        let reversed: String = format!(
            "bytes={}",
            (0..30)
                .rev()
                .map(|i| format!("{}-{}", i * 3, i * 3))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(evaluate(reversed.as_bytes(), 100), RangeOutcome::Ignore);
    }
}
