//! Scenarios of admission and authorization: webhooks, admission policies and RBAC.
