// Package version reports the version this binary was built as.
package version

import (
	"regexp"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Raw is set at build time (-ldflags "-X .../pkg/version.Raw=$(VERSION)",
// from `git describe --tags --dirty --always`): maybe empty or not semver.
var Raw = ""

// devBase is the version reported when Raw is not a semantic version.
const devBase = "0.0.0-dev"

// String returns the semantic version of this build without a leading "v";
// an untagged or dirty tree gives one such as "0.0.0-dev+1a2b3c4d.dirty".
func String() string {
	return normalize(Raw)
}

func normalize(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return devBase
	}
	if v, err := utilversion.ParseSemantic(strings.TrimPrefix(raw, "v")); err == nil {
		return v.String()
	}
	// Keep the commit in build metadata: dot-separated [0-9A-Za-z] runs.
	meta := strings.Trim(nonAlnum.ReplaceAllString(raw, "."), ".")
	if meta == "" {
		return devBase
	}
	return devBase + "+" + meta
}

var nonAlnum = regexp.MustCompile(`[^0-9A-Za-z]+`)
