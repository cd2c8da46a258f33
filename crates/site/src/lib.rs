//! Sites: resources with validators and precompressed variants, the Microscape
//! generator, and streaming discovery of embedded references in HTML.

#![forbid(unsafe_code)]

pub mod discover;
pub mod microscape;
pub mod store;
