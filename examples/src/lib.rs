//! Shared by the example programs: the command-line flags client-go controllers take, and
//! the two-version `Upstream` resource of the `upstream-webhook` example ([`upstream`]).

pub mod upstream;

use std::path::PathBuf;

use kubekit::clientset::Clientset;
use kubekit::informers::SharedInformerFactory;
use kubekit::meta::GroupVersionResource;

/// Parses `group/version/resource`, or `version/resource` for the core group.
pub fn parse_gvr(s: &str) -> anyhow::Result<GroupVersionResource> {
    let parts: Vec<&str> = s.split('/').collect();
    match parts.as_slice() {
        [version, resource] => Ok(GroupVersionResource::new("", version, resource)),
        [group, version, resource] => Ok(GroupVersionResource::new(group, version, resource)),
        _ => anyhow::bail!("expected GROUP/VERSION/RESOURCE or VERSION/RESOURCE, got {s:?}"),
    }
}

/// `--kubeconfig PATH`, `--master URL`, `--namespace NS` (each also as `--flag=value`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Flags {
    /// Path of a kubeconfig file; the default loading rules apply without it.
    pub kubeconfig: Option<PathBuf>,
    /// API server URL, overriding the kubeconfig's.
    pub master: Option<String>,
    /// Namespace to work in.
    pub namespace: Option<String>,
    /// Arguments that are not flags, in order.
    pub args: Vec<String>,
}

impl Flags {
    /// Parses the process's arguments.
    pub fn parse() -> anyhow::Result<Self> {
        Self::parse_from(std::env::args().skip(1))
    }

    /// The client configuration these flags select (client-go's
    /// `BuildConfigFromFlags(master, kubeconfig)`).
    pub async fn config(&self) -> anyhow::Result<kubekit::rest::RestConfig> {
        Ok(kubekit::rest::RestConfig::from_flags(
            self.master.as_deref(),
            self.kubeconfig.as_deref(),
        )
        .await?)
    }

    /// A shared informer factory for the cluster these flags select, watching
    /// `--namespace` (every namespace without it).
    pub async fn informer_factory(&self) -> anyhow::Result<SharedInformerFactory> {
        let clientset = Clientset::new(&self.config().await?)?;
        Ok(SharedInformerFactory::builder(clientset)
            .namespace(self.namespace.as_deref().unwrap_or_default())
            .build())
    }

    /// `--namespace`, or else the namespace of the kubeconfig's context.
    pub fn namespace_or_default(&self, config: &kubekit::rest::RestConfig) -> String {
        self.namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace().to_string())
    }

    /// Parses `args` (without the program name).
    pub fn parse_from(args: impl IntoIterator<Item = String>) -> anyhow::Result<Self> {
        let mut flags = Flags::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let slot = match name.as_str() {
                "--kubeconfig" => "kubeconfig",
                "--master" => "master",
                "--namespace" | "-n" => "namespace",
                other if other.starts_with('-') => anyhow::bail!(
                    "unknown flag {other}; known: --kubeconfig PATH, --master URL, --namespace NS"
                ),
                _ => {
                    flags.args.push(arg);
                    continue;
                }
            };
            let value = match inline {
                Some(v) => v,
                None => args
                    .next()
                    .ok_or_else(|| anyhow::anyhow!("{name} needs a value"))?,
            };
            match slot {
                "kubeconfig" => flags.kubeconfig = Some(value.into()),
                "master" => flags.master = Some(value),
                _ => flags.namespace = Some(value),
            }
        }
        Ok(flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Flags> {
        Flags::parse_from(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags_take_separate_or_inline_values_and_keep_positional_args() {
        let f = parse(&[
            "--kubeconfig",
            "/k",
            "--master=https://m",
            "-n",
            "tcs",
            "apps/v1/deployments",
        ])
        .unwrap();
        assert_eq!(f.kubeconfig, Some(PathBuf::from("/k")));
        assert_eq!(f.master.as_deref(), Some("https://m"));
        assert_eq!(f.namespace.as_deref(), Some("tcs"));
        assert_eq!(f.args, ["apps/v1/deployments"]);
    }

    #[test]
    fn resources_are_group_version_resource_or_version_resource_for_the_core_group() {
        let gvr = parse_gvr("apps/v1/deployments").unwrap();
        assert_eq!(gvr, GroupVersionResource::new("apps", "v1", "deployments"));
        assert_eq!(
            parse_gvr("v1/pods").unwrap(),
            GroupVersionResource::new("", "v1", "pods")
        );
        assert!(parse_gvr("pods").is_err());
    }

    #[test]
    fn unknown_flag_or_missing_value_is_an_error() {
        assert!(
            parse(&["--kubecfg", "x"])
                .unwrap_err()
                .to_string()
                .contains("unknown flag --kubecfg")
        );
        assert!(
            parse(&["--namespace"])
                .unwrap_err()
                .to_string()
                .contains("needs a value")
        );
    }
}
