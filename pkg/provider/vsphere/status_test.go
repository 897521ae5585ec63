package vsphere

import (
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

func TestDecodeSpec(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		invalid bool // InvalidConfiguration (the Machine fails)
		err     bool
	}{
		{"vSphere spec", `{"kind":"VSphereMachineProviderSpec","template":"rhcos","workspace":{"server":"vc"}}`, false, false},
		{"no server", `{"kind":"VSphereMachineProviderSpec","template":"rhcos","workspace":{}}`, true, true},
		{"no template", `{"kind":"VSphereMachineProviderSpec","workspace":{"server":"vc"}}`, true, true},
		{"not JSON of the type", `{"template":7}`, true, true},
		{"another provider's kind is refused, not failed", `{"kind":"AWSMachineProviderConfig","template":"x","workspace":{"server":"vc"}}`, false, true},
	}
	for _, tc := range cases {
		m := &machinev1beta1.Machine{Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(tc.raw)}}}}
		_, err := decodeSpec(m)
		if (err != nil) != tc.err || provider.IsInvalidConfiguration(err) != tc.invalid {
			t.Errorf("%s: got %v; want error %v, InvalidConfiguration %v", tc.name, err, tc.err, tc.invalid)
		}
	}
}
