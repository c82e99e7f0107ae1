package controller

import (
	"fmt"

	"golang.org/x/sync/errgroup"
)

// forEach calls fn(i) for every i below n, at most limit at once, and
// returns once all have returned. A loop's actions touch many nodes (soft
// taints, cordons, the taints and re-checks of a removal batch); one at a
// time, each waits out the API server's round trip before the next starts,
// and the client's rate (--kube-client-qps, --kube-client-burst) is what
// should bound them. With a limit of one, or one item, fn runs on the
// caller's goroutine, in order.
func forEach(n, limit int, fn func(i int)) {
	if limit <= 1 || n <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var g errgroup.Group
	g.SetLimit(limit)
	for i := range n {
		g.Go(func() error {
			fn(i)
			return nil
		})
	}
	_ = g.Wait()
}

// perNode runs fn for each node (forEach) and joins the errors in the
// nodes' order, each naming its node; nil when none failed.
func perNode(nodes []string, limit int, fn func(node string) error) error {
	errs := make([]error, len(nodes))
	forEach(len(nodes), limit, func(i int) {
		if err := fn(nodes[i]); err != nil {
			errs[i] = fmt.Errorf("node %s: %w", nodes[i], err)
		}
	})
	return joinErrors(errs)
}
