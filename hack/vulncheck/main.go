// Command vulncheck reads govulncheck's JSON stream (-format json) on stdin
// and fails (exit 1) on a reachable known vulnerability. A reachable one in
// the Go standard library may be accepted, for one toolchain version, by a
// line of the accepted file: the toolchain cannot always be upgraded, and its
// fix then has to wait. Accepted findings are printed on every run, and a
// line for the running toolchain that matches no finding fails the check, so
// the list is kept exact.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	acceptedFile := flag.String("accepted", "", "file of accepted standard library findings (ID go1.x.y reason)")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *acceptedFile); err != nil {
		fmt.Fprintln(os.Stderr, "vulncheck:", err)
		if errors.Is(err, errFailed) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

func run(in io.Reader, out io.Writer, acceptedFile string) error {
	var accepted []acceptance
	if acceptedFile != "" {
		f, err := os.Open(acceptedFile)
		if err != nil {
			return fmt.Errorf("reading the accepted findings: %w", err)
		}
		defer func() { _ = f.Close() }() // read only: nothing to flush
		if accepted, err = parseAccepted(f); err != nil {
			return fmt.Errorf("%s: %w", acceptedFile, err)
		}
	}
	scan, err := readScan(in)
	if err != nil {
		return fmt.Errorf("reading govulncheck's output: %w", err)
	}
	v := decide(scan, accepted)
	if err := report(out, scan, v); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if !v.ok() {
		return errFailed
	}
	return nil
}
