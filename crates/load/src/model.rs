//! The SURGE distributional models (Barford & Crovella, "A Performance
//! Evaluation of Hyper Text Transfer Protocols", Table 8), each with its
//! sampler (rand_distr) and its CDF, so that `check` can compare a large
//! sample against the distribution it claims to follow.
//!
//! Hybrid models ("lognormal body with Pareto tail") are spliced at the
//! Pareto scale `k`: below `k` the lognormal CDF, above it the lognormal's
//! remaining mass spread as a Pareto tail, so the CDF is continuous:
//! `F(x) = LN(x)` for `x <= k`, `1 - (1 - LN(k)) (k/x)^alpha` above. A draw
//! takes a lognormal value and, when it falls above `k`, replaces it by a
//! Pareto value.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, InverseGaussian, LogNormal, Pareto, Weibull};
use serde::Serialize;

/// Table 8's parameters, plus the few choices the paper leaves open (each
/// named and documented in docs/load.md).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// File sizes, base file body: lognormal (mu 7.630, sigma 1.001).
    pub base_body: (f64, f64),
    /// File sizes, base file tail: Pareto (k 10 KB, alpha 1.0).
    pub base_tail: (f64, f64),
    /// File sizes, embedded file: lognormal (8.215, 1.460).
    pub embedded: (f64, f64),
    /// File sizes, single file 1: lognormal (7.101, 1.200).
    pub single1: (f64, f64),
    /// File sizes, single file 2: lognormal (11.151, 1.143).
    pub single2: (f64, f64),
    /// Request sizes, body: lognormal (7.881, 1.339).
    pub request_body: (f64, f64),
    /// Request sizes, tail: Pareto (k 34102, alpha 1.177).
    pub request_tail: (f64, f64),
    /// Popularity: Zipf exponent (Zipf's law: 1).
    pub zipf_s: f64,
    /// Temporal locality: stack distance lognormal (1.5, 0.80).
    pub stack_distance: (f64, f64),
    /// OFF times between web objects, seconds: Pareto (k 1, alpha 1.4).
    pub off: (f64, f64),
    /// Embedded references (files of one object, base included): Pareto (k 2, alpha 1.245).
    pub embedded_refs: (f64, f64),
    /// Session length, web objects: inverse Gaussian (mu 3.86, lambda 6.08).
    pub session: (f64, f64),
    /// Active OFF times between the files of one object, seconds: Weibull
    /// (scale 0.382, shape 1.46), from the original SURGE paper (Barford &
    /// Crovella, SIGMETRICS '98); Table 8 does not list it.
    pub active_off: (f64, f64),
    /// Not in the paper: share of web objects that are single files.
    pub single_share: f64,
    /// Not in the paper: weight of "single file 2" in the single-file mixture.
    pub single2_weight: f64,
    /// Not in the paper: cap on files per object (the Pareto has infinite variance).
    pub max_files_per_object: usize,
    /// Not in the paper: cap on one file's size (the base tail has alpha 1: infinite mean).
    pub max_file_bytes: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            base_body: (7.630, 1.001),
            base_tail: (10_240.0, 1.0),
            embedded: (8.215, 1.460),
            single1: (7.101, 1.200),
            single2: (11.151, 1.143),
            request_body: (7.881, 1.339),
            request_tail: (34_102.0, 1.177),
            zipf_s: 1.0,
            stack_distance: (1.5, 0.80),
            off: (1.0, 1.4),
            embedded_refs: (2.0, 1.245),
            session: (3.86, 6.08),
            active_off: (0.382, 1.46),
            single_share: 0.5,
            single2_weight: 0.75,
            max_files_per_object: 64,
            max_file_bytes: 8 << 20,
        }
    }
}

/// A continuous distribution with a sampler and a CDF.
#[derive(Debug, Clone)]
pub enum Model {
    LogNormal {
        mu: f64,
        sigma: f64,
    },
    Pareto {
        k: f64,
        alpha: f64,
    },
    /// Lognormal body spliced to a Pareto tail at `k` (see the module doc).
    Hybrid {
        mu: f64,
        sigma: f64,
        k: f64,
        alpha: f64,
    },
    InverseGaussian {
        mu: f64,
        lambda: f64,
    },
    Weibull {
        scale: f64,
        shape: f64,
    },
}

impl Model {
    pub fn lognormal((mu, sigma): (f64, f64)) -> Model {
        Model::LogNormal { mu, sigma }
    }
    pub fn pareto((k, alpha): (f64, f64)) -> Model {
        Model::Pareto { k, alpha }
    }
    pub fn hybrid((mu, sigma): (f64, f64), (k, alpha): (f64, f64)) -> Model {
        Model::Hybrid {
            mu,
            sigma,
            k,
            alpha,
        }
    }

    /// One draw. Parameters are validated by `Params` construction; an
    /// invalid one here is a programming error.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match *self {
            Model::LogNormal { mu, sigma } => {
                LogNormal::new(mu, sigma).expect("sigma > 0").sample(rng)
            }
            Model::Pareto { k, alpha } => Pareto::new(k, alpha).expect("k, alpha > 0").sample(rng),
            Model::Hybrid {
                mu,
                sigma,
                k,
                alpha,
            } => {
                let x = LogNormal::new(mu, sigma).expect("sigma > 0").sample(rng);
                if x <= k {
                    x
                } else {
                    Pareto::new(k, alpha).expect("k, alpha > 0").sample(rng)
                }
            }
            Model::InverseGaussian { mu, lambda } => InverseGaussian::new(mu, lambda)
                .expect("mu, lambda > 0")
                .sample(rng),
            Model::Weibull { scale, shape } => Weibull::new(scale, shape)
                .expect("scale, shape > 0")
                .sample(rng),
        }
    }

    /// The `q`-quantile (inverse CDF), by bisection on a log scale over
    /// (1e-9, 1e12): exact to about 1e-9 relative, for every model here.
    pub fn quantile(&self, q: f64) -> f64 {
        let q = q.clamp(0.0, 1.0);
        let (mut lo, mut hi) = (1e-9f64.ln(), 1e12f64.ln());
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if self.cdf(mid.exp()) < q {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (0.5 * (lo + hi)).exp()
    }

    /// P(X <= x).
    pub fn cdf(&self, x: f64) -> f64 {
        match *self {
            Model::LogNormal { mu, sigma } => lognormal_cdf(x, mu, sigma),
            Model::Pareto { k, alpha } => pareto_cdf(x, k, alpha),
            Model::Hybrid {
                mu,
                sigma,
                k,
                alpha,
            } => {
                if x <= k {
                    lognormal_cdf(x, mu, sigma)
                } else {
                    let body = lognormal_cdf(k, mu, sigma);
                    body + (1.0 - body) * pareto_cdf(x, k, alpha)
                }
            }
            Model::InverseGaussian { mu, lambda } => {
                if x <= 0.0 {
                    return 0.0;
                }
                let a = (lambda / x).sqrt();
                let first = normal_cdf(a * (x / mu - 1.0));
                // exp(2 lambda / mu) * Phi(-a (x/mu + 1)), computed in logs so
                // that neither factor overflows.
                let tail = normal_cdf(-a * (x / mu + 1.0));
                let second = if tail > 0.0 {
                    (2.0 * lambda / mu + tail.ln()).exp()
                } else {
                    0.0
                };
                (first + second).clamp(0.0, 1.0)
            }
            Model::Weibull { scale, shape } => {
                if x <= 0.0 {
                    0.0
                } else {
                    1.0 - (-(x / scale).powf(shape)).exp()
                }
            }
        }
    }
}

fn normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
}

fn lognormal_cdf(x: f64, mu: f64, sigma: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else {
        normal_cdf((x.ln() - mu) / sigma)
    }
}

fn pareto_cdf(x: f64, k: f64, alpha: f64) -> f64 {
    if x <= k {
        0.0
    } else {
        1.0 - (k / x).powf(alpha)
    }
}

/// The one-sample Kolmogorov-Smirnov statistic of `sample` against `cdf`
/// (sorts `sample`).
pub fn ks_statistic(sample: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    sample.sort_by(f64::total_cmp);
    let n = sample.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &x) in sample.iter().enumerate() {
        let f = cdf(x);
        d = d.max(f - i as f64 / n).max((i + 1) as f64 / n - f);
    }
    d
}

/// The KS critical value at significance 0.01 for a sample of `n`
/// (asymptotic: 1.628 / sqrt(n)).
pub fn ks_critical_001(n: usize) -> f64 {
    1.628 / (n as f64).sqrt()
}

/// Least-squares slope of log(count) against log(rank) over the ranks with
/// a positive count (counts sorted descending first).
pub fn zipf_slope(counts: &[u64]) -> f64 {
    let mut c: Vec<u64> = counts.iter().copied().filter(|&c| c > 0).collect();
    c.sort_unstable_by(|a, b| b.cmp(a));
    let pts: Vec<(f64, f64)> = c
        .iter()
        .enumerate()
        .map(|(i, &n)| (((i + 1) as f64).ln(), (n as f64).ln()))
        .collect();
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}

/// One line of `pagewire load --check-model`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckLine {
    pub model: String,
    pub distribution: String,
    pub samples: usize,
    /// KS statistic D (or, for popularity, the fitted log-log slope).
    pub statistic: f64,
    /// KS critical value at 0.01 (or, for popularity, the expected slope).
    pub bound: f64,
    pub pass: bool,
}

/// Draws `n` samples from every model and compares each with its CDF (the
/// popularity line, which needs the request stream, is
/// `streamcheck::popularity`).
pub fn check(params: &Params, n: usize, seed: u64) -> Vec<CheckLine> {
    use rand::SeedableRng;
    let p = params;
    let models: Vec<(&str, String, Model)> = vec![
        (
            "file size: base (body+tail)",
            format!(
                "lognormal({}, {}) + Pareto(k {}, a {})",
                p.base_body.0, p.base_body.1, p.base_tail.0, p.base_tail.1
            ),
            Model::hybrid(p.base_body, p.base_tail),
        ),
        (
            "file size: embedded",
            format!("lognormal({}, {})", p.embedded.0, p.embedded.1),
            Model::lognormal(p.embedded),
        ),
        (
            "file size: single 1",
            format!("lognormal({}, {})", p.single1.0, p.single1.1),
            Model::lognormal(p.single1),
        ),
        (
            "file size: single 2",
            format!("lognormal({}, {})", p.single2.0, p.single2.1),
            Model::lognormal(p.single2),
        ),
        (
            "request size (body+tail)",
            format!(
                "lognormal({}, {}) + Pareto(k {}, a {})",
                p.request_body.0, p.request_body.1, p.request_tail.0, p.request_tail.1
            ),
            Model::hybrid(p.request_body, p.request_tail),
        ),
        (
            "temporal locality (stack distance)",
            format!("lognormal({}, {})", p.stack_distance.0, p.stack_distance.1),
            Model::lognormal(p.stack_distance),
        ),
        (
            "OFF time (s)",
            format!("Pareto(k {}, a {})", p.off.0, p.off.1),
            Model::pareto(p.off),
        ),
        (
            "embedded references",
            format!("Pareto(k {}, a {})", p.embedded_refs.0, p.embedded_refs.1),
            Model::pareto(p.embedded_refs),
        ),
        (
            "session length (objects)",
            format!(
                "inverse Gaussian(mu {}, lambda {})",
                p.session.0, p.session.1
            ),
            Model::InverseGaussian {
                mu: p.session.0,
                lambda: p.session.1,
            },
        ),
        (
            "active OFF time (s)",
            format!(
                "Weibull(scale {}, shape {})",
                p.active_off.0, p.active_off.1
            ),
            Model::Weibull {
                scale: p.active_off.0,
                shape: p.active_off.1,
            },
        ),
    ];
    let mut out = Vec::new();
    for (i, (name, dist, model)) in models.into_iter().enumerate() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
            seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        let mut sample: Vec<f64> = (0..n).map(|_| model.sample(&mut rng)).collect();
        let d = ks_statistic(&mut sample, |x| model.cdf(x));
        let bound = ks_critical_001(n);
        out.push(CheckLine {
            model: name.to_string(),
            distribution: dist,
            samples: n,
            statistic: d,
            bound,
            pass: d < bound,
        });
    }
    out
}

/// A uniform draw in [0, 1) (re-exported so callers need not import RngExt).
pub fn unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    rng.random::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdfs_are_monotone_and_bounded() {
        let p = Params::default();
        for m in [
            Model::hybrid(p.base_body, p.base_tail),
            Model::InverseGaussian {
                mu: 3.86,
                lambda: 6.08,
            },
            Model::Weibull {
                scale: 0.382,
                shape: 1.46,
            },
        ] {
            let mut last = 0.0;
            for i in 1..2000 {
                let x = i as f64 * 0.37 * (1.0 + i as f64);
                let f = m.cdf(x);
                assert!(
                    (0.0..=1.0).contains(&f) && f >= last - 1e-12,
                    "{m:?} at {x}"
                );
                last = f;
            }
        }
    }

    #[test]
    fn inverse_gaussian_mean_matches() {
        use rand::SeedableRng;
        let m = Model::InverseGaussian {
            mu: 3.86,
            lambda: 6.08,
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mean = (0..200_000).map(|_| m.sample(&mut rng)).sum::<f64>() / 200_000.0;
        assert!((mean - 3.86).abs() < 0.05, "{mean}");
    }
}
