//! The link model: pure, time passed in.
