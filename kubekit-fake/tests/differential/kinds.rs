//! Scenarios of the kinds the real server validates and defaults by themselves: core,
//! storage, networking, discovery, certificates, node, scheduling, flow control,
//! coordination and dynamic resource allocation.
