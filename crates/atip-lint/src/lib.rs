//! atip's `lint` layer: `lint`, `diff`, `from_clap`.

// The layers below, under the module names this code was written with (`crate::output`, …).
#[allow(unused_imports)]
pub(crate) use atip_base::{atomic, dirs, output};
#[allow(unused_imports)]
pub(crate) use atip_compile as compile;
#[allow(unused_imports)]
pub(crate) use atip_model::{model, validate};
#[allow(unused_imports)]
pub(crate) use atip_registry as registry;

pub mod diff;
pub mod from_clap;
pub mod lint;
