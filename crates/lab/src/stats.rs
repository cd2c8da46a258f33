//! Means and standard deviations of repeated runs.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{Net, RunRecord, Strategy, Test, Tuning};

/// Mean and sample standard deviation (n - 1 in the denominator; 0 for a
/// single run) of one quantity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct MeanSd {
    pub mean: f64,
    pub sd: f64,
    pub n: usize,
}

impl MeanSd {
    pub fn of(xs: impl IntoIterator<Item = f64>) -> MeanSd {
        let xs: Vec<f64> = xs.into_iter().collect();
        let n = xs.len();
        if n == 0 {
            return MeanSd {
                mean: f64::NAN,
                sd: f64::NAN,
                n,
            };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        MeanSd { mean, sd, n }
    }
}

/// One cell of our table: the successful runs of (net, strategy, test).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub net: Net,
    pub strategy: Strategy,
    pub test: Test,
    /// Runs that fetched every object.
    pub runs_ok: usize,
    /// Runs that failed (error or missing objects); not in the statistics.
    pub runs_failed: usize,
    pub packets: MeanSd,
    /// IP bytes on the link (headers included).
    pub bytes: MeanSd,
    /// TCP payload, paper 001's Bytes (none when a run predates
    /// `payload_bytes_total`: n = 0).
    pub payload: MeanSd,
    pub seconds: MeanSd,
    pub overhead_pct: MeanSd,
    pub packets_client_to_server: MeanSd,
    pub packets_server_to_client: MeanSd,
    pub sockets_total: MeanSd,
    pub sockets_max: MeanSd,
    pub retransmissions: MeanSd,
    /// Mean request size of each run (request line and headers, bytes).
    pub request_bytes: MeanSd,
}

pub type Key = (Net, Strategy, Test);

/// Group the tuned runs (Tables 4-9) by (net, strategy, test).
pub fn summarize(runs: &[RunRecord]) -> BTreeMap<Key, Summary> {
    summarize_tuning(runs, Tuning::Tuned)
}

/// Group the runs of one robot configuration by (net, strategy, test).
pub fn summarize_tuning(runs: &[RunRecord], tuning: Tuning) -> BTreeMap<Key, Summary> {
    let mut groups: BTreeMap<Key, Vec<&RunRecord>> = BTreeMap::new();
    for r in runs
        .iter()
        .filter(|r| r.robot.tuning == tuning && !r.is_sweep())
    {
        groups
            .entry((r.net, r.strategy, r.test))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|((net, strategy, test), rs)| {
            let ok: Vec<&RunRecord> = rs.iter().copied().filter(|r| r.ok()).collect();
            let f = |g: fn(&RunRecord) -> f64| MeanSd::of(ok.iter().map(|r| g(r)));
            let s = Summary {
                net,
                strategy,
                test,
                runs_ok: ok.len(),
                runs_failed: rs.len() - ok.len(),
                packets: f(|r| r.packets_total as f64),
                bytes: f(|r| r.bytes_total as f64),
                payload: if ok.iter().all(|r| r.payload_bytes_total > 0) {
                    f(|r| r.payload_bytes_total as f64)
                } else {
                    MeanSd::of([])
                },
                seconds: f(|r| r.elapsed_s),
                overhead_pct: f(|r| r.overhead_pct),
                packets_client_to_server: f(|r| r.packets_client_to_server as f64),
                packets_server_to_client: f(|r| r.packets_server_to_client as f64),
                sockets_total: f(|r| r.sockets_total as f64),
                sockets_max: f(|r| r.sockets_max as f64),
                retransmissions: f(|r| r.retransmissions as f64),
                request_bytes: MeanSd::of(
                    ok.iter()
                        .map(|r| r.mean_request_bytes)
                        .filter(|x| x.is_finite() && *x > 0.0),
                ),
            };
            ((net, strategy, test), s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_sd() {
        let m = MeanSd::of([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m.mean, 5.0);
        assert!((m.sd - 2.138_089_935).abs() < 1e-6);
        assert_eq!(MeanSd::of([3.0]).sd, 0.0);
        assert!(MeanSd::of([]).mean.is_nan());
    }
}
