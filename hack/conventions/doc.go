// Package conventions holds tests that keep the tree's conventions where
// golangci-lint has no rule for them (docs/architecture.md, Conventions):
// the log-message style and the error key of structured logs, the clock type
// and how a Reconciler keeps its Options.
package conventions
