//! The Microscape page generator (owned by the bench work).
