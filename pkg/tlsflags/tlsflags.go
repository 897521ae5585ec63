// Package tlsflags holds OpenShift's TLS flags of a server
// (--tls-min-version, --tls-cipher-suites), shared by the operator and the
// operands.
package tlsflags

import (
	"crypto/tls"
	"fmt"

	"github.com/spf13/pflag"

	cliflag "k8s.io/component-base/cli/flag"
)

// Options are OpenShift's TLS flags, applied to every TLS server of a
// binary (metrics and admission webhooks). OpenShift's operator renders them
// from the cluster's TLS security profile (APIServer
// spec.tlsSecurityProfile).
type Options struct {
	// MinVersion is a Go constant name: VersionTLS12, VersionTLS13.
	MinVersion string
	// CipherSuites are IANA names; empty keeps Go's defaults. TLS 1.3
	// suites are not configurable (Go ignores the list for TLS 1.3).
	CipherSuites []string
}

// DefaultMinVersion is the minimum TLS version without --tls-min-version.
const DefaultMinVersion = "VersionTLS12"

// Flag names.
const (
	MinVersionFlag   = "tls-min-version"
	CipherSuitesFlag = "tls-cipher-suites"
)

// AddFlags registers --tls-min-version and --tls-cipher-suites with t's
// values as defaults.
func (t *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&t.MinVersion, MinVersionFlag, t.MinVersion,
		"Minimum TLS version of the metrics and webhook servers: VersionTLS12 or VersionTLS13.")
	fs.StringSliceVar(&t.CipherSuites, CipherSuitesFlag, t.CipherSuites,
		"Comma-separated IANA names of the TLS 1.2 cipher suites of the metrics and webhook servers; empty keeps Go's defaults.")
}

// Apply returns the function that sets the options on a server's
// tls.Config, or the error naming the flag whose value is unknown.
func (t Options) Apply() (func(*tls.Config), error) {
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
