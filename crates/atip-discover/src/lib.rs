//! atip's `discover` layer: `discover`, `infer`, `remote`.

// The layers below, under the module names this code was written with (`crate::output`, …).
#[allow(unused_imports)]
pub(crate) use atip_base::{archive, atomic, digest, dirs, env, output, statat, timestamp, units};
#[allow(unused_imports)]
pub(crate) use atip_model::{model, validate};
#[allow(unused_imports)]
pub(crate) use atip_process as process;
#[allow(unused_imports)]
pub(crate) use atip_registry as registry;

pub mod discover;
pub mod infer;
pub mod remote;
