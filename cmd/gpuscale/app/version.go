package app

import (
	"fmt"
	"io"

	"github.com/gpuscale/gpuscale/internal/version"
)

// writeVersion prints the version and commit stamped by the Makefile or the
// Dockerfile (or recorded by the Go toolchain) and the Go version.
func writeVersion(w io.Writer) error {
	info := version.Get()
	commit := info.Commit
	switch {
	case commit == "":
		commit = "unknown (build with make or the Dockerfile to stamp it)"
	case info.Modified:
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(w, "gpuscale %s\n  commit:   %s\n  go:       %s\n", info.Version, commit, info.GoVersion)
	return err
}
