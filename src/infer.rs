//! Inference: ATIP metadata for tools that do not describe themselves, read from their
//! installed manual pages. Nothing is executed.
//!
//! [`locate`] finds a command's page the way `man` would, [`roff`] reads man(7) and
//! mdoc(7) into an outline, [`convert`] turns the outline into a metadata document that
//! says where it came from (`trust.source: "inferred"`) and states no effects.

pub mod roff;
