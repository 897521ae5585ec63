//go:build tools

// Package tools records golangci-lint in go.mod so that `go mod tidy` keeps it.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
