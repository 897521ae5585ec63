package webhooks

import (
	"testing"
)

var powerVSCluster = ClusterInfo{Provider: ProviderPowerVS, InfrastructureName: testInfraName}

func TestDefaultPowerVS(t *testing.T) {
	runDefaulting(t, []defaultingCase{
		{name: "system, processors, memory and Secrets are filled in", cluster: powerVSCluster, in: `{"keyPairName":"k"}`,
			want: `{"keyPairName":"k","systemType":"s922","processorType":"Shared","processors":"0.5","memoryGiB":32,` +
				`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"powervs-credentials"}}`,
			wantSet: []string{"credentialsSecret", "memoryGiB", "processorType", "processors", "systemType", "userDataSecret"}},
		{name: "one dedicated processor", cluster: powerVSCluster,
			in:      `{"processorType":"Dedicated","systemType":"e980","memoryGiB":64,"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"}}`,
			want:    `{"processorType":"Dedicated","systemType":"e980","memoryGiB":64,"processors":1,"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"}}`,
			wantSet: []string{"processors"}},
		{name: "the PowerVS kind in machine.openshift.io/v1", cluster: powerVSCluster,
			in:      `{"apiVersion":"machine.openshift.io/v1","kind":"PowerVSMachineProviderConfig","processors":2,"systemType":"s922","processorType":"Capped","memoryGiB":32,"userDataSecret":{"name":"u"}}`,
			want:    `{"apiVersion":"machine.openshift.io/v1","kind":"PowerVSMachineProviderConfig","processors":2,"systemType":"s922","processorType":"Capped","memoryGiB":32,"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"powervs-credentials"}}`,
			wantSet: []string{"credentialsSecret"}},
		{name: "a PowerVS value on a vSphere cluster", cluster: vsphereCluster, in: `{"kind":"PowerVSMachineProviderConfig"}`},
	})
}

func TestValidatePowerVS(t *testing.T) {
	valid := `{"apiVersion":"machine.openshift.io/v1","kind":"PowerVSMachineProviderConfig","keyPairName":"k",` +
		`"serviceInstance":{"type":"ID","id":"si"},"image":{"type":"Name","name":"rhcos"},"network":{"type":"RegEx","regex":"^net"},` +
		`"systemType":"s922","processorType":"Shared","processors":"0.5","memoryGiB":32,` +
		`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"powervs-credentials"}}`
	runValidation(t, powerVSCluster, secretsIn("openshift-machine-api/powervs-credentials"), []validationCase{
		{name: "valid", value: valid},
		{name: "no apiVersion and kind: no warning", value: with(t, valid, `{"apiVersion":null,"kind":null}`)},
		{name: "nothing given", value: `{}`,
			wantErrs: []string{
				"providerSpec.keyPairName: Required value: providerSpec.keyPairName must be provided",
				"providerSpec.serviceInstance: Required value: serviceInstance identifier must be provided",
				"providerSpec.image: Required value: image identifier must be provided",
				"providerSpec.network: Required value: network identifier must be provided",
				"providerSpec.userDataSecret: Required value: providerSpec.userDataSecret must be provided",
				"providerSpec.credentialsSecret: Required value: providerSpec.credentialsSecret must be provided",
			},
			wantWarnings: []string{"providerSpec.SystemType:  is not known, Currently known system types are s922, e980 and e880"}},
		{name: "identifiers without values", value: with(t, valid, `{"serviceInstance":{"type":"ID"},"image":{"type":"Name"},"network":{"type":"RegEx"}}`),
			wantErrs: []string{
				"providerSpec.serviceInstance.id: Required value: serviceInstance identifier is specified as ID but the value is nil",
				"providerSpec.image.name: Required value: image identifier is specified as Name but the value is nil",
				"providerSpec.network.regex: Required value: network identifier is specified as Regex but the value is nil",
			}},
		{name: "regex and unknown identifier types", value: with(t, valid, `{"serviceInstance":{"type":"RegEx","regex":"x"},"image":{"type":"Tag"}}`),
			wantErrs: []string{
				`providerSpec.serviceInstance: Invalid value: "RegEx": serviceInstance identifier is specified as RegEx but only ID and Name are valid resource identifiers`,
				`providerSpec.image: Invalid value: "Tag": image identifier is specified as Tag but only ID, Name and RegEx are valid resource identifiers`,
			}},
		{name: "unnamed Secrets", value: with(t, valid, `{"userDataSecret":{},"credentialsSecret":{}}`),
			wantErrs: []string{
				"providerSpec.userDataSecret.name: Required value: providerSpec.userDataSecret.name must be provided",
				"providerSpec.credentialsSecret.name: Required value: providerSpec.credentialsSecret.name must be provided",
			}},
		{name: "credentials Secret missing", value: with(t, valid, `{"credentialsSecret":{"name":"other"}}`),
			wantWarnings: []string{`providerSpec.credentialsSecret: Invalid value: "other": not found. Expected CredentialsSecret to exist`}},
		{name: "unknown system type", value: with(t, valid, `{"systemType":"s1022"}`),
			wantWarnings: []string{"providerSpec.SystemType: s1022 is not known, Currently known system types are s922, e980 and e880"}},
		{name: "too much", value: with(t, valid, `{"memoryGiB":1000,"processors":16}`),
			wantErrs: []string{
				"providerSpec.memoryGiB: Invalid value: 1000: for s922 systemtype the maximum supported memory value is 942",
				"providerSpec.processor: Invalid value: 16: for s922 systemtype the maximum supported processor value is 15.000000",
			}},
		{name: "negative", value: with(t, valid, `{"memoryGiB":-1,"processors":"-1"}`),
			wantErrs: []string{
				"providerSpec.memoryGiB: Invalid value: -1: memory value cannot be negative",
				"providerSpec.processor: Invalid value: -1: processor value cannot be negative",
			}},
		{name: "below the minimums", value: with(t, valid, `{"memoryGiB":16,"processors":"0.25"}`),
			wantWarnings: []string{
				"providerspec.MemoryGiB 16 is less than the minimum value 32",
				"providerspec.Processor 0.250000 is less than the minimum value 0.500000 for providerSpec.ProcessorType: Shared",
			}},
		{name: "half a dedicated processor", value: with(t, valid, `{"processorType":"Dedicated","processors":"0.5"}`),
			wantWarnings: []string{"providerspec.Processor 0.500000 is less than the minimum value 1.000000 for providerSpec.ProcessorType: Dedicated"}},
		{name: "processors not a number", value: with(t, valid, `{"processors":"many"}`),
			wantErrs: []string{"providerSpec.processor: Internal error: error while getting processor vlaue failed to convert Processors many to float64"}},
	})
}
