//! Discovery (client-go's `discovery` and `restmapper`): what the API server serves.
//!
//! - [`DiscoveryClient`]: server version, groups, resources (aggregated discovery when the
//!   server offers it, the legacy endpoints otherwise), preferred resources.
//! - [`CachedDiscoveryClient`]: the same answers cached in memory and optionally on disk
//!   with a TTL, invalidated on demand, refreshed when a kind is missing.
//! - [`RestMapper`]: kind (GVK) ↔ resource (GVR), with scope.
//!
//! ```no_run
//! # async fn demo(rest: kubekit::rest::RestClient) -> Result<(), Box<dyn std::error::Error>> {
//! use kubekit::discovery::{CachedDiscoveryClient, DiscoveryClient};
//! use kubekit::meta::GroupVersionKind;
//!
//! let discovery = CachedDiscoveryClient::memory(DiscoveryClient::new(rest));
//! for r in discovery.discovery().await?.preferred_resources() {
//!     println!("{} {} {}", r.name, r.group, r.version);
//! }
//! let mapping = discovery.rest_mapping(&GroupVersionKind::new("apps", "v1", "Deployment")).await?;
//! assert_eq!(mapping.resource.resource, "deployments");
//! # Ok(())
//! # }
//! ```

pub mod cache;
pub mod client;
pub mod model;
pub mod restmapper;
mod wire;

pub use cache::{CacheStats, CachedDiscoveryClient, DEFAULT_DISK_CACHE_TTL, Error};
pub use client::DiscoveryClient;
pub use model::{ApiDiscovery, ApiGroup, ApiResource};
pub use restmapper::{NoMatchError, RestMapper, RestMapping};
