//! Sites: resources with validators and precompressed variants, the Microscape
//! generator, and streaming discovery of embedded references in HTML.
pub mod discover;
pub mod microscape;
pub mod store;
