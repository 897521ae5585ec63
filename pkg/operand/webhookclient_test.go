package operand

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/certs"
)

// TestClientCAsFollowTheFile: verification is off while the file is missing, on once a CA
// appears, refuses everything while the file holds no certificate, and off again when it goes
// (the signed-certificate path is TestWebhookServesOnlyTheAPIServer's, pkg/webhooks).
// Breaks if: the file is read only once, or a broken file is treated as missing (fail open).
func TestClientCAsFollowTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ca.crt")
	cas := NewClientCAs(path)
	noCert := &tls.ConnectionState{}
	check := func(step string, wantErr string) {
		t.Helper()
		err := cas.Verify(noCert)
		if wantErr == "" && err != nil || wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("%s: Verify = %v, want %q", step, err, wantErr)
		}
	}
	check("missing", "")
	ca, err := certs.NewCA(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write := func(data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(ca.CertPEM)
	check("a CA", "no client certificate")
	write([]byte("not a certificate"))
	check("garbage", "has no usable certificate")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	check("removed", "")
}
