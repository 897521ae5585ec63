package operand

import (
	"crypto/tls"
	"fmt"

	cliflag "k8s.io/component-base/cli/flag"
)

// TLSOptions are OpenShift's TLS flags, applied to every TLS server of the
// binary (metrics and admission webhooks). OpenShift's operator renders them
// from the cluster's TLS security profile (APIServer
// spec.tlsSecurityProfile).
type TLSOptions struct {
	// MinVersion is a Go constant name: VersionTLS12, VersionTLS13.
	MinVersion string
	// CipherSuites are IANA names; empty keeps Go's defaults. TLS 1.3
	// suites are not configurable (Go ignores the list for TLS 1.3).
	CipherSuites []string
}

// DefaultTLSMinVersion is the minimum TLS version without --tls-min-version.
const DefaultTLSMinVersion = "VersionTLS12"

// Apply returns the function that sets the options on a server's
// tls.Config, or the error naming the flag whose value is unknown.
func (t TLSOptions) Apply() (func(*tls.Config), error) {
	version, err := cliflag.TLSVersion(t.MinVersion)
	if err != nil {
		return nil, fmt.Errorf("--tls-min-version: %w (one of %v)", err, cliflag.TLSPossibleVersions())
	}
	var suites []uint16
	if len(t.CipherSuites) > 0 {
		if suites, err = cliflag.TLSCipherSuites(t.CipherSuites); err != nil {
			return nil, fmt.Errorf("--tls-cipher-suites: %w", err)
		}
	}
	return func(c *tls.Config) {
		c.MinVersion = version
		if suites != nil {
			c.CipherSuites = suites
		}
	}, nil
}
