// Package safety is the Machine API's safety net, after gardener's
// machine-controller-manager and with its flag names and defaults
// (docs/safety.md): the overshoot freeze (OvershootController), the
// API-server freeze (APIServerGate) and orphan instance collection
// (OrphanCollector). Each decides in a pure, table-tested function
// (the *_decide.go files).
package safety
