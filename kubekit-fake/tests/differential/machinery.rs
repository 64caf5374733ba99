//! Scenarios of the API machinery every kind shares: object metadata, list and watch
//! options, patches, deletion, tables, CustomResourceDefinitions and request errors.
