package machineset

// Machines for the decision tests (the delete order's own tests are in internal/deletepolicy).

import "github.com/machine-api-operator/machine-api-operator/pkg/testenv/machinefixture"

var (
	t0       = machinefixture.T0
	mk       = machinefixture.Running
	nodeless = machinefixture.Nodeless
	deleting = machinefixture.Deleting
	names    = machinefixture.Names
)
