//! Experiment suites, run matrix, statistics, reference values and reports.
