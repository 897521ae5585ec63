// Package safety is the Machine API's safety net, after gardener's
// machine-controller-manager and with its flag names and defaults
// (docs/safety.md):
//
//   - the overshoot freeze (machineset-controller): a MachineSet backed by
//     far more Machines than it asks for is frozen (label freeze=True,
//     condition Frozen=True) and creates nothing until the count falls back;
//     its MachineDeployment is frozen with it;
//   - the API-server freeze (machine-controller-manager): while the API
//     server has been unreachable longer than a timeout, the machine
//     controller calls no provider Create or Delete (APIServerGate);
//   - orphan instance collection (machine-controller-manager): an instance
//     the provider lists that no Machine owns or is creating is deleted
//     (OrphanCollector).
//
// Each check observes from the cache, decides in a pure function (the
// decide*.go files, table-tested), acts, and reports (events, logs,
// metrics).
package safety
