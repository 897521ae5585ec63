// Command machine-api-operator renders, applies and reports on the Machine API
// of a cluster. See `machine-api-operator --help`.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
