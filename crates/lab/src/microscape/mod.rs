//! Paper 001 (Nielsen, Gettys et al., "Network Performance Effects of
//! HTTP/1.1, CSS1, and PNG", SIGCOMM '97): the Microscape suite behind
//! `pagewire bench`. [`plan`] lays out the matrix, [`runner`] runs it over
//! emulated links, [`reference`] holds the paper's values, [`tables`]
//! compares, [`section9`] is the CSS+PNG page's comparison, [`report`]
//! writes the files.

pub mod extras;
pub mod model;
pub mod plan;
pub mod reference;
pub mod replay;
pub mod report;
pub mod runner;
pub mod section9;
pub mod tables;
pub mod wanfit;
