// Package version says which gpuscale this binary is: the version and
// commit stamped at link time by the Makefile and the Dockerfile
//
//	go build -ldflags "-X github.com/gpuscale/gpuscale/internal/version.version=v0.2.0 \
//	    -X github.com/gpuscale/gpuscale/internal/version.commit=$(git rev-parse HEAD)" ./cmd/gpuscale
//
// or, for a plain `go build` or `go install`, what the Go toolchain
// recorded in the binary (the module version, the VCS revision).
package version

import (
	"runtime/debug"
)

// Stamped at link time with -ldflags -X; empty in a plain build. They are
// strings set by the linker only, never written at run time.
var (
	version string
	commit  string
)

// Info is what a binary knows of its build.
type Info struct {
	// Version is the release ("v0.2.0"), the output of git describe for
	// a build between releases, or "(devel)" for a plain build of a
	// checkout.
	Version string
	// Commit is the full revision, "" when unknown; Modified says the
	// working tree had uncommitted changes (known for plain builds only).
	Commit   string
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Get returns the stamped version and commit, each falling back to the
// build information the Go toolchain recorded.
func Get() Info {
	return resolve(version, commit, readBuildInfo())
}

func readBuildInfo() *debug.BuildInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return info
}

// resolve prefers the stamped values and fills the rest from info (nil
// when the binary carries none).
func resolve(stampedVersion, stampedCommit string, info *debug.BuildInfo) Info {
	out := Info{Version: stampedVersion, Commit: stampedCommit}
	if info != nil {
		out.GoVersion = info.GoVersion
		if out.Version == "" {
			out.Version = info.Main.Version
		}
		if out.Commit == "" {
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					out.Commit = s.Value
				case "vcs.modified":
					out.Modified = s.Value == "true"
				}
			}
		}
	}
	if out.Version == "" {
		out.Version = "unknown"
	}
	return out
}

// ShortCommit is the commit's first 12 characters, or "unknown".
func (i Info) ShortCommit() string {
	switch {
	case i.Commit == "":
		return "unknown"
	case len(i.Commit) > 12:
		return i.Commit[:12]
	default:
		return i.Commit
	}
}

// String is the one-line form for logs and --version:
// "v0.2.0 (commit 0123456789ab, go1.26.8)".
func (i Info) String() string {
	c := i.ShortCommit()
	if i.Modified {
		c += ", modified"
	}
	if i.GoVersion == "" {
		return i.Version + " (commit " + c + ")"
	}
	return i.Version + " (commit " + c + ", " + i.GoVersion + ")"
}
