//! kubekit's integration tests, against the real local control plane started by
//! `testenv` (one per run of this binary; each test in its own namespace).

mod api_groups;
mod apply_client_go;
mod clientset;
mod common;
mod configmaps;
mod discovery;
mod dynamic;
mod endpoints;
mod informers;
mod leaderelection;
mod manager;
mod metadata;
mod pager;
mod pods;
mod rest;
mod retry;
mod scale;
mod watch;
