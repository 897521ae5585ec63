package version

import (
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		raw  string
		want string
	}{
		{raw: "", want: "0.0.0-dev"},
		{raw: "v4.22.0", want: "4.22.0"},
		{raw: "4.22.0-rc.1", want: "4.22.0-rc.1"},
		{raw: "v0.1.0-3-g1a2b3c4d", want: "0.1.0-3-g1a2b3c4d"},
		{raw: "v0.1.0-3-g1a2b3c4d-dirty", want: "0.1.0-3-g1a2b3c4d-dirty"},
		{raw: "1a2b3c4d", want: "0.0.0-dev+1a2b3c4d"},
		{raw: "1a2b3c4d-dirty", want: "0.0.0-dev+1a2b3c4d.dirty"},
		{raw: "  --  ", want: "0.0.0-dev"},
		{raw: "weird/branch_name@x", want: "0.0.0-dev+weird.branch.name.x"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got := normalize(tt.raw)
			if got != tt.want {
				t.Fatalf("normalize(%q) = %q, want %q", tt.raw, got, tt.want)
			}
			if _, err := utilversion.ParseSemantic(got); err != nil {
				t.Fatalf("normalize(%q) = %q is not semver: %v", tt.raw, got, err)
			}
		})
	}
}
