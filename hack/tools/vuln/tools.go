//go:build tools

// Package tools records govulncheck and the vulnerability database's
// generator (x/vulndb's indexdb) as dependencies of this module.
package tools

import (
	_ "golang.org/x/vuln/cmd/govulncheck"
	_ "golang.org/x/vulndb/cmd/indexdb"
)
