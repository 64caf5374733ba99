//! The informer machinery (client-go's `tools/cache`). Being built: so far the key
//! functions, the indexed store and the delta FIFO.
//!
//! - [`key`]: how objects are named in the cache, and tombstones.
//! - [`store`]: [`Indexer`], the thread-safe cache with named secondary indexes.
//! - [`delta_fifo`]: [`DeltaFifo`], the queue of changes between a reflector and an
//!   informer.

pub mod delta_fifo;
pub mod key;
pub mod store;

pub use delta_fifo::{Closed, Delta, DeltaFifo, DeltaType, Deltas};
pub use key::{
    DeletedFinalStateUnknown, KeyError, MaybeTombstone, deletion_handling_meta_namespace_key,
    meta_namespace_key, split_meta_namespace_key,
};
pub use store::{Error, IndexFunc, Indexer, NAMESPACE_INDEX, namespace_index_func};
