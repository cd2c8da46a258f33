//! Sites: resources with validators and precompressed variants, and the
//! Microscape generator. Discovery of embedded references lives in the
//! `pagewire-discover` crate (re-exported here as [`discover`]).

// No unsafe code, except the one module that maps large files (mmap,
// madvise, munmap), each call with its SAFETY argument.
#![deny(unsafe_code)]

pub use pagewire_discover as discover;
#[allow(unsafe_code)]
pub mod mapped;
pub mod microscape;
pub mod store;
