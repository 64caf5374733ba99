//! The per-group clients of [`Clientset`]: `core_v1()`, `apps_v1()`, `networking_v1()`,
//! `policy_v1()`, `storage_v1()`, …, each with one accessor per resource (`pods(ns)`,
//! `nodes()`, `ingresses(ns)`, …), for every group version `k8s-openapi` has types for.
//!
//! # Contract
//!
//! - Every accessor returns a [`ResourceClient`] of the resource's `k8s-openapi` type; the
//!   group clients hold nothing but a handle on the shared [`RestClient`], so they are
//!   cheap to make and to clone.
//! - Namespaced resources take a namespace (`""`: all namespaces, for list, watch and
//!   delete_collection); cluster-scoped ones take none. The table is checked against each
//!   type's scope and api version when compiling: listing a type in the wrong section or
//!   group version does not build.
//! - The clients are generated from kubekit's one table of built-in resources
//!   (`clientset/table.rs`), which also generates the informer factory's accessors; adding
//!   a resource is one line there. [`built_in_resources`] lists what it holds.
//! - A group version or resource whose type the program's `k8s-openapi` version feature
//!   lacks has no accessor in that build (`resource_v1()` needs v1_34 or later, say).
//!
//! ```no_run
//! # async fn demo(clientset: kubekit::clientset::Clientset) -> kubekit::rest::Result<()> {
//! use kubekit::clientset::ListOptions;
//!
//! let pods = clientset.core_v1().pods("default").list(&ListOptions::default()).await?;
//! let nodes = clientset.core_v1().nodes().list(&ListOptions::default()).await?;
//! let leases = clientset.coordination_v1().leases("kube-system");
//! # let _ = (pods, nodes, leases);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::LazyLock;

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Clientset;
use super::options::ListOptions;
use super::resource_client::{KnownScope, ResourceClient};
use super::table::{built_in_groups, gated, same_str};
use crate::meta::GroupVersionResource;
use crate::rest::{Error, RestClient, Result};

/// A resource of the built-in table: what the clientset (and, unless it cannot be watched,
/// the informer factory) has a typed accessor for. See [`built_in_resources`].
///
/// Only the table makes them (so [`list_typed`](Self::list_typed) knows each accessor).
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct BuiltInResource {
    /// API group; empty for the core group.
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Plural resource name used in URLs, e.g. `ingresses`.
    pub resource: &'static str,
    /// Kind of the objects, e.g. `Ingress`.
    pub kind: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the informer factory has an accessor for it (false for resources the
    /// server cannot watch: `bindings`, `componentstatuses`).
    pub informer: bool,
    /// The clientset's accessor, e.g. `networking_v1().ingresses(ns)`.
    pub accessor: &'static str,
    /// The Cargo feature that compiles the informer factory's accessor of the resource
    /// into kubekit, e.g. `prebuilt-networking` (see `kubekit::informers`, "Build
    /// time").
    pub prebuilt: &'static str,
    /// One more feature that compiles that accessor into kubekit: `prebuilt-common`, on by
    /// default, for the core kinds most controllers read (see `kubekit::informers`, "Build
    /// time").
    pub also_prebuilt: Option<&'static str>,
}

impl BuiltInResource {
    fn of<K>(
        accessor: &'static str,
        informer: bool,
        prebuilt: &'static str,
        also_prebuilt: Option<&'static str>,
    ) -> Self
    where
        K: k8s_openapi::Resource,
        K::Scope: KnownScope,
    {
        Self {
            group: K::GROUP,
            version: K::VERSION,
            resource: K::URL_PATH_SEGMENT,
            kind: K::KIND,
            namespaced: <K::Scope as KnownScope>::NAMESPACED,
            informer,
            accessor,
            prebuilt,
            also_prebuilt,
        }
    }

    /// The resource's group/version/resource.
    pub fn gvr(&self) -> GroupVersionResource {
        GroupVersionResource::new(self.group, self.version, self.resource)
    }

    /// Lists the resource (in all namespaces) through its typed client, the clientset's
    /// [`accessor`](Self::accessor), and returns how many objects decoded; an object that
    /// does not decode as the table's type is an error. What a test uses to prove that the
    /// server and the table agree on the resource and its type.
    ///
    /// Inline, as the dispatch to every typed client behind it: a program that never calls
    /// it compiles no typed list of the table's types (kubekit's own build neither).
    #[inline]
    pub fn list_typed(
        &self,
        clientset: &Clientset,
        options: &ListOptions,
    ) -> BoxFuture<'static, Result<usize>> {
        list_built_in(self.accessor, clientset, options)
    }
}

impl fmt::Debug for BuiltInResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltInResource")
            .field("resource", &self.gvr().to_string())
            .field("kind", &self.kind)
            .field("namespaced", &self.namespaced)
            .field("informer", &self.informer)
            .field("accessor", &self.accessor)
            .field("prebuilt", &self.prebuilt)
            .field("also_prebuilt", &self.also_prebuilt)
            .finish_non_exhaustive()
    }
}

/// Lists with `client`, as [`BuiltInResource::list_typed`] does.
fn list_erased<K>(
    client: ResourceClient<K>,
    options: &ListOptions,
) -> BoxFuture<'static, Result<usize>>
where
    K: kube::Resource<DynamicType = ()>
        + Serialize
        + DeserializeOwned
        + Clone
        + Send
        + Sync
        + 'static,
{
    let options = options.clone();
    Box::pin(async move {
        let mut list = client.list(&options).await?;
        match list.skipped.pop() {
            Some(e) => Err::<usize, Error>(e),
            None => Ok(list.items.len()),
        }
    })
}

/// Whether a resource has an informer: `[client only]` ones have none.
macro_rules! has_informer {
    (only) => {
        false
    };
    () => {
        true
    };
}

/// The table's `[prebuilt "feature"]` of a resource, as an `Option`.
macro_rules! also_prebuilt {
    ($feature:literal) => {
        Some($feature)
    };
    () => {
        None
    };
}

/// The accessor of a resource as the table names it: `networking_v1().ingresses(ns)`.
macro_rules! accessor_path {
    ($group:ident, $resource:ident, $args:literal) => {
        concat!(stringify!($group), "().", stringify!($resource), $args)
    };
}

/// Generates, from the table, a client struct per API group version with its resource
/// accessors, the `Clientset` accessor of each group client, and [`built_in_resources`].
macro_rules! api_groups {
    ($(
        $(#[doc = $doc:literal])*
        $accessor:ident => $Client:ident, $Informers:ident (
            $api_version:literal, $($module:ident)::+, $prebuilt:literal
        )
        $(if $gate:ident)?
        {
            namespaced {
                $(
                    $ns_fn:ident: $NsKind:ident $([client $ns_only:ident])?
                    $([prebuilt $ns_also:literal])? $(if $ns_gate:ident)?,
                )*
            }
            cluster {
                $(
                    $cl_fn:ident: $ClKind:ident $([client $cl_only:ident])?
                    $([prebuilt $cl_also:literal])? $(if $cl_gate:ident)?,
                )*
            }
        }
    )*) => {
        $(
            gated! { $($gate)?;
                /// The types of the group version, under a short path.
                mod $accessor {
                    pub(super) use $($module)::+::*;
                }

                $(#[doc = $doc])*
                #[derive(Clone, Debug)]
                pub struct $Client {
                    rest: RestClient,
                }

                impl $Client {
                    /// The group client on top of `rest`.
                    pub fn new(rest: RestClient) -> Self {
                        Self { rest }
                    }

                    /// The REST client underneath.
                    pub fn rest_client(&self) -> &RestClient {
                        &self.rest
                    }

                    $(
                        gated! { $($ns_gate)?;
                            #[doc = concat!(
                                "A client of `", $api_version, "` `", stringify!($NsKind),
                                "` objects in `namespace` (`\"\"`: all namespaces)."
                            )]
                            pub fn $ns_fn(
                                &self,
                                namespace: &str,
                            ) -> ResourceClient<$accessor::$NsKind> {
                                ResourceClient::namespaced(self.rest.clone(), namespace)
                            }
                        }
                    )*

                    $(
                        gated! { $($cl_gate)?;
                            #[doc = concat!(
                                "A client of `", $api_version, "` `", stringify!($ClKind),
                                "` objects (cluster-scoped)."
                            )]
                            pub fn $cl_fn(&self) -> ResourceClient<$accessor::$ClKind> {
                                ResourceClient::cluster(self.rest.clone())
                            }
                        }
                    )*
                }

                impl Clientset {
                    #[doc = concat!("The `", $api_version, "` group client.")]
                    pub fn $accessor(&self) -> $Client {
                        $Client::new(self.rest_client().clone())
                    }
                }

                $(
                    gated! { $($ns_gate)?;
                        const _: () = assert!(
                            same_str(
                                <$accessor::$NsKind as k8s_openapi::Resource>::API_VERSION,
                                $api_version,
                            ),
                            concat!(
                                "the table's api version of ", stringify!($NsKind),
                                " is not its type's",
                            ),
                        );
                    }
                )*
                $(
                    gated! { $($cl_gate)?;
                        const _: () = assert!(
                            same_str(
                                <$accessor::$ClKind as k8s_openapi::Resource>::API_VERSION,
                                $api_version,
                            ),
                            concat!(
                                "the table's api version of ", stringify!($ClKind),
                                " is not its type's",
                            ),
                        );
                    }
                )*
            }
        )*

        /// Every resource of the built-in table, in the table's order: each has a typed
        /// accessor on the [`Clientset`] and, when [`informer`](BuiltInResource::informer)
        /// is set, on the informer factory. The resources whose types the program's
        /// `k8s-openapi` version lacks are left out.
        // Pushed one by one: each push is compiled only for the Kubernetes versions whose
        // k8s-openapi has the type.
        #[allow(clippy::vec_init_then_push)]
        pub fn built_in_resources() -> &'static [BuiltInResource] {
            static TABLE: LazyLock<Vec<BuiltInResource>> = LazyLock::new(|| {
                let mut table = Vec::new();
                $(
                    gated! { $($gate)?;
                        $(
                            gated! { $($ns_gate)?;
                                table.push(BuiltInResource::of::<$accessor::$NsKind>(
                                    accessor_path!($accessor, $ns_fn, "(ns)"),
                                    has_informer!($($ns_only)?),
                                    $prebuilt,
                                    also_prebuilt!($($ns_also)?),
                                ));
                            }
                        )*
                        $(
                            gated! { $($cl_gate)?;
                                table.push(BuiltInResource::of::<$accessor::$ClKind>(
                                    accessor_path!($accessor, $cl_fn, "()"),
                                    has_informer!($($cl_only)?),
                                    $prebuilt,
                                    also_prebuilt!($($cl_also)?),
                                ));
                            }
                        )*
                    }
                )*
                table
            });
            &TABLE
        }

        /// Lists the resource of the table whose accessor is `accessor` through its typed
        /// client, as [`BuiltInResource::list_typed`] does. Inline: see there.
        #[inline]
        fn list_built_in(
            accessor: &str,
            clientset: &Clientset,
            options: &ListOptions,
        ) -> BoxFuture<'static, Result<usize>> {
            $(
                gated! { $($gate)?;
                    $(
                        gated! { $($ns_gate)?;
                            if accessor == accessor_path!($accessor, $ns_fn, "(ns)") {
                                return list_erased(clientset.$accessor().$ns_fn(""), options);
                            }
                        }
                    )*
                    $(
                        gated! { $($cl_gate)?;
                            if accessor == accessor_path!($accessor, $cl_fn, "()") {
                                return list_erased(clientset.$accessor().$cl_fn(), options);
                            }
                        }
                    )*
                }
            )*
            unreachable!("{accessor}: only the table makes a BuiltInResource")
        }
    };
}

built_in_groups!(api_groups);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::GroupVersionResource;

    fn clientset() -> Clientset {
        let config = kube::Config::new("https://127.0.0.1:1".parse().expect("url"));
        Clientset::new(&crate::rest::RestConfig::from_kube(config)).expect("clientset")
    }

    #[tokio::test]
    async fn group_accessors_reach_the_resource_of_their_group_and_scope() {
        let cs = clientset();
        let cases = [
            (cs.core_v1().pods("ns").gvr().clone(), ("", "v1", "pods")),
            (cs.core_v1().nodes().gvr().clone(), ("", "v1", "nodes")),
            (
                cs.apps_v1().deployments("").gvr().clone(),
                ("apps", "v1", "deployments"),
            ),
            (
                cs.batch_v1().cron_jobs("ns").gvr().clone(),
                ("batch", "v1", "cronjobs"),
            ),
            (
                cs.coordination_v1().leases("ns").gvr().clone(),
                ("coordination.k8s.io", "v1", "leases"),
            ),
            (
                cs.events_v1().events("ns").gvr().clone(),
                ("events.k8s.io", "v1", "events"),
            ),
            (
                cs.rbac_v1().cluster_role_bindings().gvr().clone(),
                ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
            ),
            (
                cs.apiextensions_v1()
                    .custom_resource_definitions()
                    .gvr()
                    .clone(),
                ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
            ),
            (
                cs.networking_v1().ingresses("ns").gvr().clone(),
                ("networking.k8s.io", "v1", "ingresses"),
            ),
            (
                cs.autoscaling_v2()
                    .horizontal_pod_autoscalers("ns")
                    .gvr()
                    .clone(),
                ("autoscaling", "v2", "horizontalpodautoscalers"),
            ),
            (
                cs.storage_v1().csi_drivers().gvr().clone(),
                ("storage.k8s.io", "v1", "csidrivers"),
            ),
            (
                cs.internal_v1alpha1().storage_versions().gvr().clone(),
                ("internal.apiserver.k8s.io", "v1alpha1", "storageversions"),
            ),
            (
                cs.apiregistration_v1().api_services().gvr().clone(),
                ("apiregistration.k8s.io", "v1", "apiservices"),
            ),
        ];
        for (gvr, (g, v, r)) in &cases {
            assert_eq!(gvr, &GroupVersionResource::new(g, v, r));
        }
        assert_eq!(cs.core_v1().pods("ns").namespace(), Some("ns"));
        assert_eq!(cs.core_v1().events("ns").gvr().group, "");
        assert_eq!(cs.core_v1().namespaces().namespace(), None);
    }

    #[test]
    fn built_in_resources_name_each_resource_once_with_its_scope_and_accessor() {
        let table = built_in_resources();
        let mut seen = std::collections::HashSet::new();
        for r in table {
            assert!(seen.insert(r.gvr()), "{} twice in the table", r.gvr());
            let suffix = if r.namespaced { "(ns)" } else { "()" };
            assert!(r.accessor.ends_with(suffix), "{r:?}");
        }
        // Every listable type of k8s-openapi's v1_37 (the dev-dependencies' feature), and
        // the create-only `bindings`.
        assert_eq!(table.len(), 85);
        let no_informer: Vec<_> = table
            .iter()
            .filter(|r| !r.informer)
            .map(|r| r.resource)
            .collect();
        assert_eq!(no_informer, ["bindings", "componentstatuses"]);
        let ingresses = table
            .iter()
            .find(|r| r.gvr() == GroupVersionResource::new("networking.k8s.io", "v1", "ingresses"))
            .expect("ingresses");
        assert_eq!(
            (ingresses.kind, ingresses.namespaced, ingresses.accessor),
            ("Ingress", true, "networking_v1().ingresses(ns)")
        );
    }

    #[test]
    fn prebuilt_common_names_seven_core_kinds_that_have_informers() {
        let common: Vec<_> = built_in_resources()
            .iter()
            .filter(|r| r.also_prebuilt.is_some())
            .collect();
        for r in &common {
            assert_eq!(r.also_prebuilt, Some("prebuilt-common"), "{r:?}");
            assert_eq!((r.group, r.prebuilt), ("", "prebuilt-core"), "{r:?}");
            assert!(r.informer, "{r:?} has no informer to prebuild");
        }
        let kinds: Vec<_> = common.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                "ConfigMap",
                "Pod",
                "Secret",
                "Service",
                "ServiceAccount",
                "Namespace",
                "Node"
            ]
        );
    }
}
