package webhooks

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
)

// secretsIn finds exactly the Secrets named "namespace/name".
func secretsIn(names ...string) SecretLookup {
	return func(namespace, name string) (bool, error) {
		return slices.Contains(names, namespace+"/"+name), nil
	}
}

// with returns the JSON object base with the top-level keys of the JSON
// object patch set (a null removes the key).
func with(t *testing.T, base, patch string) string {
	t.Helper()
	var b, p map[string]json.RawMessage
	if err := json.Unmarshal([]byte(base), &b); err != nil {
		t.Fatalf("base %s: %v", base, err)
	}
	if err := json.Unmarshal([]byte(patch), &p); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	for k, v := range p {
		if string(v) == "null" {
			delete(b, k)
			continue
		}
		b[k] = v
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// defaultingCase is one providerSpec.value defaulted on a cluster.
type defaultingCase struct {
	name    string
	cluster ClusterInfo
	in      string   // the value; "" = none
	want    string   // the value after defaulting; "" = unchanged
	wantSet []string // the top-level keys defaulting wrote
}

func runDefaulting(t *testing.T, cases []defaultingCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := value(tc.in)
			before := ps.DeepCopy()
			set, _ := DefaultProviderSpec(&ps, tc.cluster)
			if !reflect.DeepEqual(set, tc.wantSet) {
				t.Errorf("defaulted keys = %q, want %q", set, tc.wantSet)
			}
			if tc.want == "" {
				if !reflect.DeepEqual(&ps, before) {
					t.Errorf("value changed to %s, want it unchanged", ps.Value.Raw)
				}
				return
			}
			jsonEqual(t, ps.Value.Raw, tc.want)
			again := ps.DeepCopy()
			if set, _ := DefaultProviderSpec(again, tc.cluster); set != nil {
				t.Errorf("defaulting again sets %q", set)
			}
		})
	}
}

// validationCase is one providerSpec.value validated on a cluster, with
// OpenShift's exact error and warning texts.
type validationCase struct {
	name         string
	value        string // "" = none
	wantErrs     []string
	wantWarnings []string
}

// secretCases are the cases of the providers whose Secrets are checked alike: both Secrets
// unnamed (refused), the credentials Secret missing (a warning).
func secretCases(t *testing.T, valid string) []validationCase {
	return []validationCase{
		{name: "unnamed Secrets", value: with(t, valid, `{"userDataSecret":{},"credentialsSecret":{}}`),
			wantErrs: []string{
				"providerSpec.userDataSecret.name: Required value: name must be provided",
				"providerSpec.credentialsSecret.name: Required value: name must be provided",
			}},
		{name: "credentials Secret missing", value: with(t, valid, `{"credentialsSecret":{"name":"other"}}`),
			wantWarnings: []string{`providerSpec.credentialsSecret: Invalid value: "other": not found. Expected CredentialsSecret to exist`}},
	}
}

// runValidation validates each case's value as the template of a MachineSet
// in openshift-machine-api named "m" on cluster, with secrets.
func runValidation(t *testing.T, cluster ClusterInfo, secrets SecretLookup, cases []validationCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := ValidateProviderSpec(value(tc.value), cluster, "openshift-machine-api", "m", secrets, specPath.Child("providerSpec", "value"))
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.wantErrs) {
				t.Errorf("errors:\n got  %q\n want %q", got, tc.wantErrs)
			}
			if !reflect.DeepEqual(warnings, tc.wantWarnings) {
				t.Errorf("warnings:\n got  %q\n want %q", warnings, tc.wantWarnings)
			}
		})
	}
}

func TestProviderFor(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		cluster Provider
		want    Provider
	}{
		{"no apiVersion and kind: the cluster's", `{"ami":{}}`, ProviderAWS, ProviderAWS},
		{"the platform's kind", `{"kind":"AWSMachineProviderConfig"}`, ProviderAWS, ProviderAWS},
		{"the platform's kind and group", `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`, ProviderAWS, ProviderAWS},
		{"a legacy group without kind", `{"apiVersion":"awsproviderconfig.openshift.io/v1beta1"}`, ProviderAWS, ProviderAWS},
		{"machine.openshift.io without kind", `{"apiVersion":"machine.openshift.io/v1"}`, ProviderAWS, ProviderAWS},
		{"machine.openshift.io/v1 without kind on Nutanix", `{"apiVersion":"machine.openshift.io/v1"}`, ProviderNutanix, ProviderNutanix},
		{"the PowerVS kind", `{"apiVersion":"machine.openshift.io/v1","kind":"PowerVSMachineProviderConfig"}`, ProviderPowerVS, ProviderPowerVS},
		{"another platform's kind: foreign", `{"apiVersion":"machine.openshift.io/v1beta1","kind":"GCPMachineProviderSpec"}`, ProviderAWS, ProviderUnknown},
		{"a platform kind on a kubemark cluster: foreign", `{"kind":"AWSMachineProviderConfig"}`, ProviderKubemark, ProviderUnknown},
		{"kubemark on an AWS cluster", `{"apiVersion":"` + kubemarkAPIVersion + `"}`, ProviderAWS, ProviderKubemark},
		{"another group without kind: foreign", `{"apiVersion":"example.com/v1"}`, ProviderAWS, ProviderUnknown},
		{"a platform kind on OpenStack: foreign", `{"kind":"OpenstackProviderSpec"}`, ProviderUnknown, ProviderUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fields := parseFields([]byte(tc.value))
			if fields == nil {
				t.Fatal("not an object")
			}
			if got, _ := providerFor(fields, tc.cluster); got != tc.want {
				t.Errorf("providerFor = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCredentialsWarnings(t *testing.T) {
	failing := func(string, string) (bool, error) { return false, errors.New("timed out") }
	tests := []struct {
		name    string
		secrets SecretLookup
		want    []string
	}{
		{"found", secretsIn("ns/creds"), nil},
		{"not found", secretsIn(), []string{`providerSpec.credentialsSecret: Invalid value: "creds": not found. Expected CredentialsSecret to exist`}},
		{"read error", failing, []string{`providerSpec.credentialsSecret: Invalid value: "creds": failed to get credentialsSecret: timed out`}},
		{"no lookup", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := platformEnv{secrets: tc.secrets}.credentialsWarnings("ns", "creds")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOverlayKeepsUnknownKeys(t *testing.T) {
	fields := parseFields([]byte(`{"placement":{"availabilityZone":"a","custom":1},"extra":true}`))
	if fields == nil {
		t.Fatal("not an object")
	}
	set := overlay(fields, []byte(`{"placement":{"availabilityZone":"a"},"instanceType":""}`),
		[]byte(`{"placement":{"availabilityZone":"a","region":"r"},"instanceType":"t"}`))
	if want := []string{"instanceType", "placement"}; !reflect.DeepEqual(set, want) {
		t.Errorf("set = %q, want %q", set, want)
	}
	out, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, out, `{"placement":{"availabilityZone":"a","custom":1,"region":"r"},"extra":true,"instanceType":"t"}`)
}
