//! atip's `base` layer: `output`, `atomic`, `cancel`, `digest`, `dirs`, `env`, `units`, `timestamp`, `similar`, `statat`, `archive`, `tls`.

pub mod archive;
pub mod atomic;
pub mod cancel;
pub mod digest;
pub mod dirs;
pub mod env;
pub mod fileio;
pub mod output;
pub mod similar;
pub mod statat;
pub mod timestamp;
pub mod tls;
pub mod units;
