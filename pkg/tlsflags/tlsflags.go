// Package tlsflags holds OpenShift's server TLS flags of the operator and the operands.
package tlsflags

import (
	"crypto/tls"
	"fmt"
	"slices"
	"sync"

	"github.com/spf13/pflag"

	cliflag "k8s.io/component-base/cli/flag"
)

// Options are the TLS flags of a binary's TLS servers, from the cluster's TLS security profile.
type Options struct {
	MinVersion   string   // a Go constant name: VersionTLS12, VersionTLS13
	CipherSuites []string // IANA names (TLS 1.2; Go fixes 1.3's); empty keeps Go's defaults
}

// DefaultMinVersion is the minimum TLS version without --tls-min-version.
const DefaultMinVersion = "VersionTLS12"

// Flag names.
const (
	MinVersionFlag   = "tls-min-version"
	CipherSuitesFlag = "tls-cipher-suites"
)

// AddFlags registers the flags with t's values as defaults.
func (t *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&t.MinVersion, MinVersionFlag, t.MinVersion,
		"Minimum TLS version of the metrics and webhook servers: VersionTLS12 or VersionTLS13.")
	fs.StringSliceVar(&t.CipherSuites, CipherSuitesFlag, t.CipherSuites,
		"Comma-separated IANA names of the TLS 1.2 cipher suites of the metrics and webhook servers; empty keeps Go's defaults.")
}

// Apply returns the function setting the options on a tls.Config, or the flag's error.
func (t Options) Apply() (func(*tls.Config), error) {
	version, err := cliflag.TLSVersion(t.MinVersion)
	if err != nil {
		return nil, fmt.Errorf("--tls-min-version: %w (one of %v)", err, cliflag.TLSPossibleVersions())
	}
	suites, err := cliflag.TLSCipherSuites(t.CipherSuites) // nil for none
	if err != nil {
		return nil, fmt.Errorf("--tls-cipher-suites: %w", err)
	}
	return func(c *tls.Config) {
		c.MinVersion = version
		if suites != nil {
			c.CipherSuites = suites
		}
	}, nil
}

// Live is a server's TLS settings that may change while it runs: each
// handshake uses the current ones, so a new cluster TLS profile needs no restart.
type Live struct {
	mu      sync.RWMutex
	current Options
	apply   func(*tls.Config)
}

// NewLive returns a Live holding o, or the error naming the flag whose value is unknown.
func NewLive(o Options) (*Live, error) {
	l := &Live{}
	if _, err := l.Set(o); err != nil {
		return nil, err
	}
	return l, nil
}

// Set replaces the settings and reports whether they changed; on an error the current ones stay.
func (l *Live) Set(o Options) (changed bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Every sync calls Set: parse only what changed.
	if l.apply != nil && l.current.MinVersion == o.MinVersion && slices.Equal(l.current.CipherSuites, o.CipherSuites) {
		return false, nil
	}
	apply, err := o.Apply()
	if err != nil {
		return false, err
	}
	l.current = Options{MinVersion: o.MinVersion, CipherSuites: slices.Clone(o.CipherSuites)}
	l.apply = apply
	return true, nil
}

// Current returns the settings in force.
func (l *Live) Current() Options {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return Options{MinVersion: l.current.MinVersion, CipherSuites: slices.Clone(l.current.CipherSuites)}
}

// Configure is a controller-runtime TLSOpts entry: each handshake gets a copy
// of c, taken then (so later options are kept), with the current settings.
func (l *Live) Configure(c *tls.Config) {
	base := c
	c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := base.Clone()
		cfg.GetConfigForClient = nil
		l.mu.RLock()
		apply := l.apply
		l.mu.RUnlock()
		apply(cfg)
		return cfg, nil
	}
}
