//! One module per command; each owns its `Args` and `run`.
pub mod bench;
pub mod bench_surge;
pub mod claims;
pub mod fetch;
pub mod link;
pub mod linkopts;
pub mod load;
pub mod pack;
pub mod prefetch;
pub mod record;
pub mod serve;
pub mod site;
pub mod unpack;
