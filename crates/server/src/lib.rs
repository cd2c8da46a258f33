//! The origin server.
