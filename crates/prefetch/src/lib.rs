//! Prefetching: access-log reader, dependency-graph predictor, simulator (paper 003).
