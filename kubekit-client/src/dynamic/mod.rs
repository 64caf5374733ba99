//! The dynamic client (client-go's `dynamic` and apimachinery's `unstructured`): objects
//! of any resource, named by [`GroupVersionResource`](crate::meta::GroupVersionResource)
//! at run time, for code that cannot know its types when compiled (generic tools, custom
//! resources without Rust types, garbage collectors, …).
//!
//! - [`DynamicClient`] / [`DynamicResourceClient`]: the same verbs as the typed clients
//!   (create, get, list, watch, update, update_status, patch, delete, delete_collection),
//!   namespaced or cluster-wide, on [`Unstructured`] objects.
//! - [`Unstructured`]: typed metadata, everything else as JSON; why it has that shape is
//!   explained on [its module](unstructured).
//! - [`to_typed`], [`into_typed`], [`from_typed`]: conversion to and from typed objects,
//!   refusing an object of another kind with a [`ConversionError`] naming both kinds.
//!
//! ```no_run
//! # async fn demo(config: kubekit::rest::RestConfig) -> Result<(), Box<dyn std::error::Error>> {
//! use kubekit::clientset::GetOptions;
//! use kubekit::dynamic::DynamicClient;
//! use kubekit::meta::GroupVersionResource;
//!
//! let dynamic = DynamicClient::new(&config)?;
//! let apps = GroupVersionResource::new("appcontroller.k8s.io", "v1", "apps");
//! let app = dynamic.resource(&apps).namespace("demo").get("web", &GetOptions::default()).await?;
//! println!("{:?}", app.nested(&["spec", "deploymentTemplate", "replicas"]));
//! # Ok(())
//! # }
//! ```

pub mod client;
pub mod convert;
pub mod unstructured;

pub use client::{DynamicClient, DynamicResourceClient};
pub use convert::{ConversionError, from_typed, into_typed, to_typed};
pub use unstructured::Unstructured;
