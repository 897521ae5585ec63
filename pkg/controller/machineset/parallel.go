package machineset

import "golang.org/x/sync/errgroup"

// parallel runs fn(0..n-1) with at most limit running at a time and returns
// their errors by index: callers count failures and join them, which an
// errgroup's single first error cannot tell.
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

func countErrors(errs []error) int {
	n := 0
	for _, err := range errs {
		if err != nil {
			n++
		}
	}
	return n
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
