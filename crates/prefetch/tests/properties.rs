//! Property tests pinning paper 003's definitions against a brute-force
//! reference, and the log reader against arbitrary damage.

use std::collections::HashMap;

use pagewire_prefetch::graph::{DependencyGraph, GraphLimits, Window};
use pagewire_prefetch::log::AccessLog;
use proptest::prelude::*;

/// The definition, computed the slow way: for every request for A by a
/// client, each distinct B != A among that client's next w - 1 requests
/// counts once; weight = that count / requests for A.
fn reference(seq: &[(u8, u32)], w: usize) -> (HashMap<u32, u32>, HashMap<(u32, u32), u32>) {
    let mut count = HashMap::new();
    let mut arcs = HashMap::new();
    let mut per_client: HashMap<u8, Vec<u32>> = HashMap::new();
    for &(c, u) in seq {
        per_client.entry(c).or_default().push(u);
    }
    for reqs in per_client.values() {
        for (k, &a) in reqs.iter().enumerate() {
            *count.entry(a).or_insert(0) += 1;
            let mut seen = Vec::new();
            for &b in reqs.iter().skip(k + 1).take(w - 1) {
                if b != a && !seen.contains(&b) {
                    seen.push(b);
                    *arcs.entry((a, b)).or_insert(0) += 1;
                }
            }
        }
    }
    (count, arcs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Weights follow the definition exactly and never exceed 1.0 (§8).
    #[test]
    fn weights_match_definition_and_never_exceed_one(
        seq in prop::collection::vec((0u8..4, 0u32..12), 0..300),
        w in 2usize..=10,
    ) {
        let mut g = DependencyGraph::new(GraphLimits { max_arcs_per_node: 1024 });
        let mut windows: HashMap<u8, Window> = HashMap::new();
        for &(c, u) in &seq {
            g.observe(windows.entry(c).or_insert_with(|| Window::new(w)), u);
        }
        let (count, arcs) = reference(&seq, w);
        for (&a, &n) in &count {
            prop_assert_eq!(g.count(a), n);
        }
        let mut seen = 0;
        for (a, b, weight) in g.arcs() {
            prop_assert!(weight <= 1.0, "weight {} > 1 on {}->{}", weight, a, b);
            prop_assert!(weight > 0.0);
            let expected = f64::from(arcs[&(a, b)]) / f64::from(count[&a]);
            prop_assert_eq!(weight, expected);
            seen += 1;
        }
        prop_assert_eq!(seen, arcs.len());
        // Ranked lists are best first.
        for a in 0..12 {
            let mut out = Vec::new();
            g.ranked(a, &mut out);
            prop_assert!(out.windows(2).all(|p| p[0].0 >= p[1].0));
        }
    }

    /// With a small arc budget, eviction still never pushes a weight above 1.
    #[test]
    fn bounded_graph_weights_stay_at_most_one(
        seq in prop::collection::vec((0u8..3, 0u32..40), 0..400),
        w in 2usize..=10,
    ) {
        let mut g = DependencyGraph::new(GraphLimits { max_arcs_per_node: 3 });
        let mut windows: HashMap<u8, Window> = HashMap::new();
        for (k, &(c, u)) in seq.iter().enumerate() {
            g.observe(windows.entry(c).or_insert_with(|| Window::new(w)), u);
            if k % 97 == 96 {
                g.prune_idle(50);
            }
        }
        for (_, _, weight) in g.arcs() {
            prop_assert!(weight <= 1.0);
        }
        prop_assert!(g.arc_count() <= 40 * 3);
    }

    /// Damaged logs never panic the reader, and every line is accounted for.
    #[test]
    fn reader_survives_damage(
        cuts in prop::collection::vec((0usize..4000, any::<u8>(), 0u8..4), 0..40),
        junk in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let good: &[u8] = include_bytes!("data/sample.log");
        let mut text = good[..good.len().min(4000)].to_vec();
        for (pos, byte, op) in cuts {
            let pos = pos.min(text.len());
            match op {
                0 => text.insert(pos, byte),                // insert junk
                1 if pos < text.len() => { text.remove(pos); } // drop a byte
                2 => text.insert(pos, b'\n'),               // truncate a line
                _ if pos < text.len() => text[pos] = byte,  // overwrite
                _ => {}
            }
        }
        text.extend_from_slice(&junk);
        let log = AccessLog::from_bytes(&text);
        let st = &log.stats;
        prop_assert_eq!(st.lines, st.parsed + st.skipped);
        let by_reason: u64 = st.skipped_by_reason.iter().map(|x| x.1).sum();
        prop_assert_eq!(by_reason, st.skipped);
        prop_assert_eq!(log.requests.len() as u64, st.parsed);
        let newlines = text.iter().filter(|&&b| b == b'\n').count() as u64;
        prop_assert!(st.lines <= newlines + 1);
    }
}

/// A hand-made broken log: each kind of damage is skipped with its reason and
/// the good lines around it survive.
#[test]
fn broken_log_file_is_read_to_the_end() {
    let text = b"a - - [29/Aug/1995:23:53:25 -0400] \"GET /x HTTP/1.0\" 200 10\n\
a - - [29/Aug/1995:23:53:26 -0400] \"GET /y HT\n\
\x00\x01\x02\xff\xfe binary junk \x7f\n\
\n\
b - - [29/Aug/1995:23:53:27 -0400] \"GET /z HTTP/1.0\"\n\
c - - [29/Aug/1995:23:5\n\
d\n\
e - - [29/Aug/1995:23:53:28 -0400] \"GET /x HTTP/1.0\" 304 0\n\
f - - [29/Aug/1995:23:53:29 -0400] \"GET /w HTTP/1.0\" 200 1";
    let log = AccessLog::from_bytes(text);
    let st = &log.stats;
    assert_eq!(st.lines, 9);
    assert_eq!(st.parsed, 3);
    assert_eq!(st.skipped, 6);
    use pagewire_prefetch::log::SkipReason::*;
    assert_eq!(st.skipped_for(MissingRequest), 1, "{st:?}");
    assert_eq!(st.skipped_for(Binary), 1, "{st:?}");
    assert_eq!(st.skipped_for(Empty), 1, "{st:?}");
    assert_eq!(st.skipped_for(MissingStatus), 1, "{st:?}");
    assert_eq!(st.skipped_for(MissingDate), 2, "{st:?}");
}
