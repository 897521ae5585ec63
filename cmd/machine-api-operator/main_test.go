package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr: %s", code, errOut.String())
	}
	if got := out.String(); !strings.HasPrefix(got, "MachineAPIOperator v0.0.0-dev") {
		t.Fatalf("unexpected version output %q", got)
	}
}

func TestUnknownFlagIsUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version", "--no-such-flag"}, &out, &errOut); code != 2 {
		t.Fatalf("exit code %d, want 2; stderr: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "no-such-flag") || !strings.Contains(errOut.String(), "Usage:") {
		t.Fatalf("stderr lacks the flag name or usage: %s", errOut.String())
	}
}
