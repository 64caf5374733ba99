//! Work queues for controllers (client-go's `util/workqueue`). Being built.
