//! Integration tests of `kubekit::clientset`.
