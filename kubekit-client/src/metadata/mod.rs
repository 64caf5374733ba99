//! The metadata-only client (client-go's `metadata`): the metadata of objects of any
//! resource — names, namespaces, labels, annotations, owner references, finalizers,
//! resourceVersions — without the rest of them, for code that needs only those (garbage
//! collectors, quota and label tools, controllers that map owned objects to owners) and
//! should not pay for a whole Secret's data or a whole Pod's spec.
//!
//! - [`MetadataClient`] / [`MetadataResourceClient`]: get, list, watch, patch, delete and
//!   delete_collection by [`GroupVersionResource`](crate::meta::GroupVersionResource),
//!   namespaced or cluster-wide, asking the API server for `PartialObjectMetadata` (the
//!   server strips the objects before sending them: the bytes on the wire are metadata
//!   only).
//! - [`PartialObjectMetadata`]: what they return: `apiVersion`, `kind` and the typed
//!   `ObjectMeta`.
//! - Informers and listers over metadata (client-go's `metadatainformer` and
//!   `metadatalister`): `kubekit::informers::SharedInformerFactory::for_metadata` gives the
//!   shared informer of a resource's metadata, with the factory's namespace, tweak, resync
//!   and list settings, and its `kubekit::listers::Lister` (namespaced get and list by
//!   label selector, from the cache).
//!
//! # Contract
//!
//! - Every request negotiates metadata only, as client-go's metadata client does (the
//!   exact `Accept` headers are on [the client's module](client)); a server that sends
//!   whole objects anyway is served too: their metadata is kept and the rest skipped while
//!   decoding, and their `apiVersion`/`kind` are left empty. An answer that is no object
//!   is an error that says so.
//! - The metadata includes `managedFields` as the server sends them (often most of it);
//!   an informer that does not read them can drop them before they are stored:
//!   `informer.set_transform(kubekit::cache::strip_managed_fields)`.
//! - A metadata informer of a resource is its own informer (its own list-watch and cache),
//!   separate from a typed or dynamic informer of that resource in the same factory.
//!
//! ```no_run
//! # async fn demo(clientset: kubekit::clientset::Clientset) -> Result<(), Box<dyn std::error::Error>> {
//! use kubekit::cache::strip_managed_fields;
//! use kubekit::informers::SharedInformerFactory;
//! use kubekit::labels::Selector;
//! use kubekit::meta::GroupVersionResource;
//! use tokio_util::sync::CancellationToken;
//!
//! let factory = SharedInformerFactory::new(clientset);
//! let pods = factory.for_metadata(&GroupVersionResource::new("", "v1", "pods"));
//! pods.informer().set_transform(strip_managed_fields);
//! factory.start();
//! factory.wait_for_cache_sync(&CancellationToken::new()).await;
//! for pod in pods.lister().namespaced("demo").list(&"app=web".parse::<Selector>()?) {
//!     println!("{:?} owned by {:?}", pod.metadata.name, pod.metadata.owner_references);
//! }
//! factory.shutdown().await;
//! # Ok(())
//! # }
//! ```

pub mod client;
pub mod object;

pub use client::{MetadataClient, MetadataResourceClient};
pub use object::{API_VERSION, KIND, PartialObjectMetadata};
