// Package version reports the version this binary was built as.
package version

import (
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Raw is set at build time with
// -ldflags "-X github.com/machine-api-operator/machine-api-operator/pkg/version.Raw=$(VERSION)",
// usually from `git describe --tags --dirty --always`. It may be empty or not
// semver at all (an untagged checkout gives a bare commit hash).
var Raw = ""

// devBase is the version reported when Raw is not a semantic version.
const devBase = "0.0.0-dev"

// String returns the semantic version of this build, without a leading "v".
// A build from an untagged or dirty tree yields a development version such as
// "0.0.0-dev+1a2b3c4d.dirty"; it never fails.
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
	// Keep the commit in build metadata, which allows only [0-9A-Za-z-.].
	meta := strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '.':
			return r
		default:
			return '.'
		}
	}, raw)
	meta = strings.Trim(meta, ".")
	for strings.Contains(meta, "..") {
		meta = strings.ReplaceAll(meta, "..", ".")
	}
	if meta == "" {
		return devBase
	}
	return devBase + "+" + meta
}
