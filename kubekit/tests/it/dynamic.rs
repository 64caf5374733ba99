//! Integration tests of `kubekit::dynamic`.
