//! __NAME__'s custom resources, each in a module with its controller.

pub mod __SNAKE__;
// kubekit api: a kind's module goes above this line.
