//! The robot: a page-fetching client with the transfer strategies of paper 001.
