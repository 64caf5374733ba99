//! Prints the App CRD manifest generated from the Rust types:
//! `cargo run -p app-controller --bin crdgen > app-controller/artifacts/crd/appcontroller.k8s.io_apps.yaml`

fn main() {
    print!("{}", app_controller::crd_yaml());
}
