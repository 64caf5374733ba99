//! Tells the generated code which Kubernetes version k8s-openapi was built for: a type or
//! field that only some versions have is compiled under `#[cfg(k8s_openapi = "1.NN")]`.
//! k8s-openapi publishes its version to dependents' build scripts as
//! `DEP_K8S_OPENAPI_<crate version>_VERSION`, `0x00_01_NN_00`.

fn main() {
    const VERSIONS: std::ops::RangeInclusive<u32> = 33..=37;
    let values: Vec<String> = VERSIONS.map(|v| format!("\"1.{v}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(k8s_openapi, values({}))",
        values.join(", ")
    );
    let version = std::env::vars()
        .find(|(k, _)| k.starts_with("DEP_K8S_OPENAPI_") && k.ends_with("_VERSION"))
        .map(|(_, v)| v)
        .expect("k8s-openapi publishes its version to the build scripts of the crates that depend on it");
    let version: u32 = version.parse().expect("k8s-openapi's version is a number");
    let minor = (version >> 8) & 0xff;
    assert!(
        VERSIONS.contains(&minor),
        "kubekit-protobuf is generated for Kubernetes 1.{}..=1.{}; k8s-openapi was built for 1.{minor}",
        VERSIONS.start(),
        VERSIONS.end()
    );
    println!("cargo::rustc-cfg=k8s_openapi=\"1.{minor}\"");
}
