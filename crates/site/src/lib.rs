//! Sites: resources with validators and precompressed variants, and the
//! Microscape generator. Discovery of embedded references lives in the
//! `pagewire-discover` crate (re-exported here as [`discover`]).

#![forbid(unsafe_code)]

pub use pagewire_discover as discover;
pub mod microscape;
pub mod store;
