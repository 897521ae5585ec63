package config

import (
	"cmp"
	"crypto/tls"
	"slices"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/tlsflags"
)

// TLSProfile is the operand's --tls-min-version and --tls-cipher-suites.
type TLSProfile struct {
	MinVersion string // "VersionTLS12"
	// CipherSuites are the IANA names Go can configure (not TLS 1.3's), in order.
	CipherSuites []string
}

// Options are the profile as a TLS server's settings.
func (p TLSProfile) Options() tlsflags.Options {
	return tlsflags.Options{MinVersion: p.MinVersion, CipherSuites: p.CipherSuites}
}

// ResolveTLSProfile returns the APIServer's spec.tlsSecurityProfile when
// spec.tlsAdherence asks every component to honor it, else Intermediate.
func ResolveTLSProfile(apiServer *configv1.APIServer) TLSProfile {
	spec := configv1.TLSProfiles[configv1.TLSProfileIntermediateType]
	if apiServer != nil && honorClusterTLSProfile(apiServer.Spec.TLSAdherence) {
		if s := tlsProfileSpec(apiServer.Spec.TLSSecurityProfile); s != nil {
			spec = s
		}
	}
	return TLSProfile{MinVersion: string(spec.MinTLSVersion), CipherSuites: ianaCipherSuites(spec.Ciphers)}
}

// honorClusterTLSProfile: StrictAllComponents, or a value unknown here (strict per the API).
func honorClusterTLSProfile(p configv1.TLSAdherencePolicy) bool {
	return p != configv1.TLSAdherencePolicyNoOpinion && p != configv1.TLSAdherencePolicyLegacyAdheringComponentsOnly
}

// tlsProfileSpec is a profile's spec; nil when unset or incomplete.
func tlsProfileSpec(p *configv1.TLSSecurityProfile) *configv1.TLSProfileSpec {
	if p == nil {
		return nil
	}
	if p.Type == configv1.TLSProfileCustomType {
		if p.Custom == nil || p.Custom.MinTLSVersion == "" {
			return nil
		}
		return &p.Custom.TLSProfileSpec
	}
	return configv1.TLSProfiles[p.Type]
}

// openSSLToIANA maps the profiles' OpenSSL cipher names to IANA names.
var openSSLToIANA = map[string]string{
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-SHA256":     "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-RSA-AES128-SHA256":       "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"ECDHE-ECDSA-AES256-SHA384":     "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
	"ECDHE-RSA-AES256-SHA384":       "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
	"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
	"AES128-GCM-SHA256":             "TLS_RSA_WITH_AES_128_GCM_SHA256",
	"AES256-GCM-SHA384":             "TLS_RSA_WITH_AES_256_GCM_SHA384",
	"AES128-SHA256":                 "TLS_RSA_WITH_AES_128_CBC_SHA256",
	"AES256-SHA256":                 "TLS_RSA_WITH_AES_256_CBC_SHA256",
	"AES128-SHA":                    "TLS_RSA_WITH_AES_128_CBC_SHA",
	"AES256-SHA":                    "TLS_RSA_WITH_AES_256_CBC_SHA",
	"DES-CBC3-SHA":                  "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
}

// ianaCipherSuites returns the IANA names of the ciphers Go can configure,
// without duplicates.
func ianaCipherSuites(ciphers []string) []string {
	configurable := map[string]bool{}
	for _, s := range slices.Concat(tls.CipherSuites(), tls.InsecureCipherSuites()) {
		if !slices.Equal(s.SupportedVersions, []uint16{tls.VersionTLS13}) {
			configurable[s.Name] = true
		}
	}
	var out []string
	for _, c := range ciphers {
		name := cmp.Or(openSSLToIANA[c], c)
		if configurable[name] && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
