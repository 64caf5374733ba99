//! The manager layer (controller-runtime's `manager`): what a controller process runs
//! around its controllers.
//!
//! - [`Endpoints`]: the metrics (`/metrics`) and health (`/healthz`, `/readyz`) endpoints.

pub mod endpoints;

pub use endpoints::{Check, Endpoints, Served};
