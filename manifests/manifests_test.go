package manifests

import (
	"testing"
)

func TestCRDsDecode(t *testing.T) {
	want := map[CRDSet][]string{
		MachineCRDs: {"machinehealthchecks.machine.openshift.io", "machines.machine.openshift.io", "machinesets.machine.openshift.io"},
		ConfigCRDs: {
			"clusteroperators.config.openshift.io", "clusterversions.config.openshift.io", "proxies.config.openshift.io",
			"featuregates.config.openshift.io", "infrastructures.config.openshift.io",
		},
		NodeMaintenanceCRDs:   {"nodemaintenances.nodemaintenance.medik8s.io"},
		MachineDeploymentCRDs: {"machinedeployments.machine.openshift.io"},
	}
	for set, names := range want {
		crds, err := CRDs(set)
		if err != nil {
			t.Fatalf("CRDs(%s): %v", set, err)
		}
		if len(crds) != len(names) {
			t.Fatalf("CRDs(%s) returned %d CRDs, want %d", set, len(crds), len(names))
		}
		for i, crd := range crds {
			if crd.Name != names[i] {
				t.Errorf("CRDs(%s)[%d] = %s, want %s", set, i, crd.Name, names[i])
			}
			if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil {
				t.Errorf("%s has no schema", crd.Name)
			}
		}
	}
}

func TestUnknownCRDSet(t *testing.T) {
	if _, err := CRDs("nope"); err == nil {
		t.Fatal("expected an error for an unknown CRD set")
	}
}
