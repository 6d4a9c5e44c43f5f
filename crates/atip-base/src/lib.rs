//! atip's `base` layer: `output`, `atomic`, `digest`, `dirs`, `units`, `timestamp`, `similar`, `statat`, `archive`.

pub mod archive;
pub mod atomic;
pub mod digest;
pub mod dirs;
pub mod output;
pub mod similar;
pub mod statat;
pub mod timestamp;
pub mod units;
