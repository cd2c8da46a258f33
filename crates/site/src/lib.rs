//! Sites: resources with validators and precompressed variants, and the
//! Microscape generator. Discovery of embedded references lives in the
//! `pagewire-discover` crate (re-exported here as [`discover`]).
pub use pagewire_discover as discover;
pub mod microscape;
pub mod store;
