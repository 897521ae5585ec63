package machineset

import (
	"cmp"

	"golang.org/x/sync/errgroup"
)

// parallel runs fn(0..n-1), at most limit at a time, and returns their errors
// by index: callers count failures, which an errgroup's first error cannot tell.
func parallel(n, limit int, fn func(i int) error) []error {
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(max(1, limit))
	for i := range n {
		g.Go(func() error { errs[i] = fn(i); return nil })
	}
	_ = g.Wait() // every fn's error is in errs
	return errs
}

func failures(errs []error) (n int, first error) {
	for _, err := range errs {
		if err != nil {
			n++
			first = cmp.Or(first, err)
		}
	}
	return n, first
}
