//go:build !unix

package cluster

// lockFile does not lock where flock(2) is missing: clusters created at the
// same time by parallel test processes may then pick the same ports.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
