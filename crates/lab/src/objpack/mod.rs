//! `pagewire bench --suite objpack`: the experiments of Fujinoki, Sanjay,
//! Shah, "Web File Transmission by Object Packaging — Performance Comparison
//! with HTTP 1.0 and HTTP 1.1 Persistent Connection" (Tables 2-7), over the
//! emulated 100 Mbit/s LAN (the paper's Fast Ethernet) and a WAN, with
//! HTTP/1.1 pipelining (the paper's future work), multipart/related and tar
//! beside the paper's three methods.

pub mod claims;
pub mod files;
pub mod methods;
pub mod model;
pub mod reference;
pub mod report;
pub mod run;
pub mod sys;

pub use run::{run, ObjpackConfig, ObjpackOutcome, RunRow};

/// The object-packaging suite.
pub struct Objpack;

impl crate::suite::Suite for Objpack {
    const KIND: crate::claims::Suite = crate::claims::Suite::Objpack;
    const RUNS: &'static str =
        "Fujinoki, Sanjay, Shah, object packaging: Tables 3-7 on lan100 and wan";
    type Ctx = claims::Ctx;
    fn claims() -> &'static [crate::claims::spec::ClaimSpec<Self::Ctx>] {
        claims::CLAIMS
    }
    fn judge(
        results: &serde_json::Value,
        _dir: Option<&std::path::Path>,
    ) -> anyhow::Result<crate::claims::Judged> {
        let j = claims::judge_value(results)?;
        Ok(crate::claims::Judged {
            model: model::model_notes(results, &j.claims),
            ..j
        })
    }
}
