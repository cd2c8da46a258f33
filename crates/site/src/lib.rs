//! Sites: resources with validators and precompressed variants, and the
//! Microscape generator. Discovery of embedded references lives in the
//! `pagewire-discover` crate (re-exported here as [`discover`]).

// The README's examples are compiled and run with the doctests.
#![cfg_attr(doctest, doc = include_str!("../README.md"))]
// No unsafe code, except the one module that maps large files (mmap,
// madvise, munmap), each call with its SAFETY argument.
#![deny(unsafe_code)]

pub use pagewire_discover as discover;
#[allow(unsafe_code)]
pub mod mapped;
pub mod microscape;
pub mod store;
