//! The run matrix: which runs, in which order, and how long they should take.

use std::fmt::Write as _;

use serde::Serialize;

use crate::model::{Net, Strategy, Test, Tuning};

/// Repetitions per network. The paper repeated every run 5 times; so does
/// the default, everywhere. PPP runs are ~1 minute each at 28.8 kbit/s but
/// rate-bound (little CPU), so PPP repetitions run concurrently, each on its
/// own link (see [`Plan::parallel`]).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Reps {
    pub lan: u32,
    pub wan: u32,
    pub ppp: u32,
}

impl Reps {
    /// Default: 5 on every network, as the paper.
    pub const DEFAULT: Reps = Reps {
        lan: 5,
        wan: 5,
        ppp: 5,
    };
    /// `--quick`: one of each.
    pub const QUICK: Reps = Reps {
        lan: 1,
        wan: 1,
        ppp: 1,
    };

    pub fn uniform(n: u32) -> Reps {
        Reps {
            lan: n,
            wan: n,
            ppp: n,
        }
    }

    pub fn get(&self, net: Net) -> u32 {
        match net.like() {
            Net::Lan => self.lan,
            Net::Wan => self.wan,
            _ => self.ppp,
        }
    }
}

/// One planned run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RunSpec {
    pub net: Net,
    pub strategy: Strategy,
    pub test: Test,
    pub rep: u32,
    /// The paper's tuned robot (Tables 4-9) or its initial one (Table 3).
    pub tuning: Tuning,
    /// A run of the WAN round-trip-time sweep (`bench --rtt-sweep`): the
    /// link's RTT in microseconds (the WAN profile otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_rtt_us: Option<u32>,
}

/// The strategies a WAN RTT sweep runs: the two the latency sentence
/// compares (paper 001's final HTTP/1.1, pipelined, against HTTP/1.0).
pub const SWEEP_STRATEGIES: [Strategy; 2] = [Strategy::Http10, Strategy::Pipeline];

impl RunSpec {
    /// Rough seconds the run takes on this machine, for the plan and the
    /// progress bar's ETA (measured with the default profiles; a revalidation
    /// without pipelining costs ~one RTT per object; PPP is rate-bound).
    pub fn estimate_s(&self) -> f64 {
        use Strategy::*;
        use Test::*;
        if let Some(us) = self.sweep_rtt_us {
            // WAN runs are RTT-bound: the profile's estimate scaled from its
            // 90 ms, never below the bandwidth-bound part (~1 s first-time).
            let base = RunSpec {
                sweep_rtt_us: None,
                ..*self
            }
            .estimate_s();
            return (base * f64::from(us) / 90_000.0).max(base.min(1.2));
        }
        let settle = match self.net.like() {
            Net::Lan => 0.25,
            Net::Wan => 0.35,
            _ => 0.4,
        };
        if self.strategy.is_browser() {
            // Whole run incl. the browser's start and close (docs/chromium.md).
            return settle
                + match (self.net.like(), self.test) {
                    (Net::Lan, _) => 2.5,
                    (Net::Wan, _) => 3.1,
                    (_, First) => 52.0,
                    (_, Revalidate) => 13.5,
                };
        }
        // Measured on the 2-core development machine (docs/bench-results).
        if self.tuning == Tuning::Initial && self.strategy.pipelines() {
            // The 1 s flush timer: the page request waits for it, then
            // each partial batch of image requests (measured, LAN).
            return settle
                + match self.test {
                    Test::First => 2.1,
                    Test::Revalidate => 2.1,
                };
        }
        let work = match (self.net.like(), self.test, self.strategy) {
            (Net::Lan, First, _) => 0.2,
            (Net::Lan, Revalidate, _) => 0.1,
            (Net::Wan, First, Http11) => 5.1,
            (Net::Wan, First, Http10) => 2.7,
            (Net::Wan, First, _) => 1.2,
            (Net::Wan, Revalidate, Http11) => 4.1,
            (Net::Wan, Revalidate, Http10) => 2.3,
            (Net::Wan, Revalidate, _) => 0.35,
            (_, First, PipelineDeflate) => 44.5,
            (_, First, Pipeline) => 53.5,
            (_, First, _) => 61.0,
            (_, Revalidate, Http11) => 11.5,
            (_, Revalidate, Http10) => 8.1,
            (_, Revalidate, _) => 3.1,
        };
        work + settle
    }
}

/// The whole matrix, in run order: per network, per repetition, per
/// strategy, first-time then revalidation with the same (now warm) cache.
/// Strategies are interleaved within a repetition so slow drift on the
/// machine spreads over all of them.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub nets: Vec<Net>,
    pub strategies: Vec<Strategy>,
    pub tests: Vec<Test>,
    pub reps: Reps,
    /// Networks that also run the initial configuration (Table 3).
    pub initial_nets: Vec<Net>,
    /// The WAN round-trip-time sweep's RTTs, microseconds (empty: none).
    pub rtt_sweep_us: Vec<u32>,
    /// Repetitions run at once on PPP, each on its own link (namespace
    /// pair) and server; 1 = one after another. LAN and WAN runs are
    /// always sequential (CPU and timing matter there).
    pub ppp_parallel: u32,
    pub runs: Vec<RunSpec>,
}

impl Plan {
    pub fn new(nets: &[Net], strategies: &[Strategy], tests: &[Test], reps: Reps) -> Plan {
        let mut runs = Vec::new();
        for &net in nets {
            for rep in 0..reps.get(net) {
                for &strategy in strategies {
                    for &test in tests {
                        runs.push(RunSpec {
                            net,
                            strategy,
                            test,
                            rep,
                            tuning: Tuning::Tuned,
                            sweep_rtt_us: None,
                        });
                    }
                }
            }
        }
        Plan {
            nets: nets.to_vec(),
            strategies: strategies.to_vec(),
            tests: tests.to_vec(),
            reps,
            initial_nets: Vec::new(),
            rtt_sweep_us: Vec::new(),
            ppp_parallel: 1,
            runs,
        }
    }

    /// Adds the paper's initial, untuned configuration (Table 3) on `nets`
    /// for the strategies Table 3 has (HTTP/1.0, HTTP/1.1, pipelined), each
    /// repetition after that network's tuned runs of the same repetition.
    pub fn with_initial(mut self, nets: &[Net]) -> Plan {
        let mut runs = Vec::with_capacity(self.runs.len());
        for (i, r) in self.runs.iter().enumerate() {
            runs.push(*r);
            let last_of_rep = self
                .runs
                .get(i + 1)
                .is_none_or(|n| n.net != r.net || n.rep != r.rep);
            if last_of_rep && nets.contains(&r.net) && r.sweep_rtt_us.is_none() {
                for &strategy in &self.strategies {
                    // Table 3's three: no deflate, nor later strategies.
                    if !matches!(
                        strategy,
                        Strategy::Http10 | Strategy::Http11 | Strategy::Pipeline
                    ) {
                        continue;
                    }
                    for &test in &self.tests {
                        runs.push(RunSpec {
                            tuning: Tuning::Initial,
                            strategy,
                            test,
                            ..*r
                        });
                    }
                }
            }
        }
        self.runs = runs;
        self.initial_nets = nets.to_vec();
        self
    }

    /// Adds a WAN round-trip-time sweep after everything else: at each RTT
    /// (microseconds, ascending, duplicates dropped), the WAN profile with
    /// that RTT, `reps` repetitions of http10 and pipeline (those of the
    /// plan's strategies) and each of the plan's tests, tuned robot. The
    /// runs are tagged (`sweep_rtt_us`): the latency sentence reads them,
    /// no table or other claim does.
    pub fn with_rtt_sweep(mut self, rtts_us: &[u32], reps: u32) -> Plan {
        let mut rtts = rtts_us.to_vec();
        rtts.sort_unstable();
        rtts.dedup();
        for &us in &rtts {
            for rep in 0..reps {
                for &strategy in self
                    .strategies
                    .iter()
                    .filter(|s| SWEEP_STRATEGIES.contains(s))
                {
                    for &test in &self.tests {
                        self.runs.push(RunSpec {
                            net: Net::Wan,
                            strategy,
                            test,
                            rep,
                            tuning: Tuning::Tuned,
                            sweep_rtt_us: Some(us),
                        });
                    }
                }
            }
        }
        self.rtt_sweep_us = rtts;
        self
    }

    /// The links the plan runs on, in plan order: each network, then each
    /// RTT of the sweep (on the WAN profile).
    pub fn link_groups(&self) -> Vec<(Net, Option<u32>)> {
        let mut v: Vec<(Net, Option<u32>)> = Vec::new();
        for r in &self.runs {
            if !v.contains(&(r.net, r.sweep_rtt_us)) {
                v.push((r.net, r.sweep_rtt_us));
            }
        }
        v
    }

    /// Runs `n` repetitions of PPP at once (each on its own link).
    pub fn with_ppp_parallel(mut self, n: u32) -> Plan {
        self.ppp_parallel = n.max(1);
        self
    }

    /// How many links a network's repetitions run on at once.
    pub fn lanes(&self, net: Net) -> u32 {
        match net {
            Net::Ppp => self.ppp_parallel.min(self.reps.get(net)).max(1),
            _ => 1,
        }
    }

    /// Wall-clock estimate of one network's runs (lanes in parallel).
    pub fn net_estimate_s(&self, net: Net) -> f64 {
        let lanes = self.lanes(net);
        let mut per_lane = vec![0.0; lanes as usize];
        for r in self
            .runs
            .iter()
            .filter(|r| r.net == net && r.sweep_rtt_us.is_none())
        {
            per_lane[(r.rep % lanes) as usize] += r.estimate_s();
        }
        per_lane.into_iter().fold(0.0, f64::max)
    }

    /// Wall-clock estimate of the RTT sweep's runs (one after another).
    pub fn sweep_estimate_s(&self) -> f64 {
        self.runs
            .iter()
            .filter(|r| r.sweep_rtt_us.is_some())
            .map(RunSpec::estimate_s)
            .sum::<f64>()
            + self.rtt_sweep_us.len() as f64
    }

    pub fn estimate_s(&self) -> f64 {
        // Plus ~1 s per network to bring the link and server up.
        self.nets
            .iter()
            .map(|&n| self.net_estimate_s(n))
            .sum::<f64>()
            + self.nets.len() as f64
            + self.sweep_estimate_s()
    }

    /// Printed before the runs start.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Plan: {} runs = strategies [{}] x tests [{}] x networks, repetitions per network:",
            self.runs.len(),
            self.strategies
                .iter()
                .map(|x| x.name())
                .collect::<Vec<_>>()
                .join(", "),
            self.tests
                .iter()
                .map(|x| x.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for &net in &self.nets {
            let runs: Vec<&RunSpec> = self
                .runs
                .iter()
                .filter(|r| r.net == net && r.sweep_rtt_us.is_none())
                .collect();
            let est = self.net_estimate_s(net);
            let lanes = self.lanes(net);
            let _ = writeln!(
                s,
                "  {:<4} x{} reps  {:>3} runs  ~{:>4.0} s   {}{}",
                net.name(),
                self.reps.get(net),
                runs.len(),
                est,
                net.describe(),
                if lanes > 1 {
                    format!(" [{lanes} repetitions at once, one link each]")
                } else {
                    String::new()
                }
            );
        }
        if !self.initial_nets.is_empty() {
            let _ = writeln!(
                s,
                "  + Table 3's initial robot (1 s flush timer, no explicit flush, GET + HEAD revalidation) on {}",
                self.initial_nets
                    .iter()
                    .map(|n| n.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !self.rtt_sweep_us.is_empty() {
            let n = self
                .runs
                .iter()
                .filter(|r| r.sweep_rtt_us.is_some())
                .count();
            let _ = writeln!(
                s,
                "  + WAN RTT sweep at {} ms (WAN profile, http10 and pipeline): {n} runs ~{:.0} s",
                self.rtt_sweep_us
                    .iter()
                    .map(|us| crate::claims::spec::fmt_num(f64::from(*us) / 1000.0))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.sweep_estimate_s()
            );
        }
        let _ = writeln!(s, "  estimated total ~{:.0} s", self.estimate_s());
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_plan_fits_the_time_budget() {
        let p = Plan::new(&Net::PAPER, &Strategy::PAPER_001, &Test::ALL, Reps::DEFAULT)
            .with_ppp_parallel(5);
        assert_eq!(p.runs.len(), (5 + 5 + 5) * 8);
        assert_eq!(p.lanes(Net::Ppp), 5);
        assert_eq!(p.lanes(Net::Wan), 1);
        assert!(p.estimate_s() < 8.0 * 60.0, "{}", p.estimate_s());
        let p = p.with_initial(&[Net::Lan]);
        assert_eq!(p.runs.len(), (5 + 5 + 5) * 8 + 5 * 6);
        assert!(p.estimate_s() < 8.0 * 60.0, "{}", p.estimate_s());
        // Initial runs follow the tuned runs of their repetition; a
        // revalidation follows its first-time run.
        let i = p
            .runs
            .iter()
            .position(|r| r.tuning == Tuning::Initial)
            .unwrap();
        assert_eq!(i, 8);
        assert_eq!(p.runs[i + 1].test, Test::Revalidate);
        let q = Plan::new(
            &[Net::Lan, Net::Wan],
            &Strategy::PAPER_001,
            &Test::ALL,
            Reps::QUICK,
        );
        assert!(q.estimate_s() < 60.0, "{}", q.estimate_s());
        // First-time precedes revalidation of the same strategy and rep.
        let i = q.runs.iter().position(|r| r.test == Test::First).unwrap();
        assert_eq!(q.runs[i + 1].test, Test::Revalidate);
        assert_eq!(q.runs[i + 1].strategy, q.runs[i].strategy);
    }

    #[test]
    fn rtt_sweep_runs_after_the_plan_on_wan() {
        let p = Plan::new(&[Net::Lan], &Strategy::PAPER_001, &Test::ALL, Reps::QUICK)
            .with_rtt_sweep(&[400_000, 20_000, 90_000, 20_000], 3);
        assert_eq!(p.rtt_sweep_us, vec![20_000, 90_000, 400_000]);
        // 3 RTTs x 3 reps x (http10, pipeline) x 2 tests, after the 8.
        assert_eq!(p.runs.len(), 8 + 3 * 3 * 2 * 2);
        assert!(p.runs[..8].iter().all(|r| r.sweep_rtt_us.is_none()));
        assert!(p.runs[8..]
            .iter()
            .all(|r| r.net == Net::Wan && SWEEP_STRATEGIES.contains(&r.strategy)));
        assert_eq!(
            p.link_groups(),
            vec![
                (Net::Lan, None),
                (Net::Wan, Some(20_000)),
                (Net::Wan, Some(90_000)),
                (Net::Wan, Some(400_000))
            ]
        );
        // A first-time run precedes its revalidation at every RTT.
        let i = p
            .runs
            .iter()
            .position(|r| r.sweep_rtt_us.is_some())
            .unwrap();
        assert_eq!(p.runs[i].test, Test::First);
        assert_eq!(p.runs[i + 1].test, Test::Revalidate);
        // Longer RTTs are estimated longer; the sweep is in the total.
        let at = |us| {
            p.runs
                .iter()
                .find(|r| r.sweep_rtt_us == Some(us) && r.strategy == Strategy::Http10)
                .unwrap()
                .estimate_s()
        };
        assert!(at(400_000) > at(90_000) && at(90_000) > at(20_000));
        assert!(p.estimate_s() > p.sweep_estimate_s());
    }
}
