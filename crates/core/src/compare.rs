//! Comparison of two reports (filled in below).
