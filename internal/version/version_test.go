package version

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	cases := []struct {
		name            string
		version, commit string
		info            *debug.BuildInfo
		want            Info
		wantString      string
	}{
		{"stamped wins", "v0.2.0", "fedcba9876543210fedc", vcs,
			Info{Version: "v0.2.0", Commit: "fedcba9876543210fedc", GoVersion: "go1.26.8"}, "v0.2.0 (commit fedcba987654, go1.26.8)"},
		{"build info fills in", "", "", vcs,
			Info{Version: "(devel)", Commit: "0123456789abcdef0123", Modified: true, GoVersion: "go1.26.8"},
			"(devel) (commit 0123456789ab, modified, go1.26.8)"},
		{"go install of a release", "", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.1"}},
			Info{Version: "v0.3.1", GoVersion: "go1.26.8"}, "v0.3.1 (commit unknown, go1.26.8)"},
		{"nothing known", "", "", nil, Info{Version: "unknown"}, "unknown (commit unknown)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := resolve(c.version, c.commit, c.info)
			if got != c.want {
				t.Errorf("resolve = %+v, want %+v", got, c.want)
			}
			if s := got.String(); s != c.wantString {
				t.Errorf("String() = %q, want %q", s, c.wantString)
			}
		})
	}
}
