//! atip's `model` layer: `model`, `schema`, `validate`.

// The layers below, under the module names this code was written with (`crate::output`, …).
#[allow(unused_imports)]
pub(crate) use atip_base::units;
#[allow(unused_imports)]
pub(crate) use atip_process as process;

pub mod model;
pub mod schema;
pub mod validate;
