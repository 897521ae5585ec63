package tlsflags

import (
	"crypto/tls"
	"slices"
	"sync"
)

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
