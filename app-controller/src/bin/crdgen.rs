//! Prints the App CRD manifest generated from the Rust types:
//! `cargo run -p app-controller --bin crdgen > app-controller/artifacts/crd/appcontroller.k8s.io_apps.yaml`;
//! with `webhooks`, the webhook configurations generated from the App's webhook
//! registrations:
//! `cargo run -p app-controller --bin crdgen -- webhooks > app-controller/artifacts/webhook.yaml`

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("webhooks") => print!("{}", app_controller::webhook::manifests_yaml()),
        _ => print!("{}", app_controller::crd_yaml()),
    }
}
