// Package config loads the daemon's configuration: the tenants it serves (their
// credentials, memory quotas, scheduling weights and priority classes, rights and
// trust tier) and daemon-wide settings.
//
// With no file, the daemon serves the embedded default (default.yaml): one tenant
// made of the user who runs the daemon. A file is YAML; unknown keys are errors, so
// a misspelt setting is never silently ignored.
//
// The package has no locks: a *Config is immutable once loaded.
package config
