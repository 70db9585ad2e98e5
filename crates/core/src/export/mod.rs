//! Exporters: one small file per output format.
