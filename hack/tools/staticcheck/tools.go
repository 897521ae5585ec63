//go:build tools

// Package tools records the staticcheck command as a dependency of this
// module.
package tools

import _ "honnef.co/go/tools/cmd/staticcheck"
