package disruption_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuscale/gpuscale/pkg/disruption"
)

func TestParseBudget(t *testing.T) {
	b, err := disruption.ParseBudget("nodes=20%; groups=gpu-.*; schedule=CRON_TZ=America/New_York 0 22 * * *; duration=8h")
	if err != nil {
		t.Fatal(err)
	}
	if b.Nodes != 20 || !b.Percent || b.Duration != 8*time.Hour || b.Schedule == nil {
		t.Errorf("parsed %+v", b)
	}
	if !b.Groups.MatchString("gpu-a100") || b.Groups.MatchString("cpu-gpu-x") {
		t.Error("groups must match whole node group ids")
	}
	for _, tc := range []struct{ in, want string }{
		{"groups=gpu", "nodes: required"},
		{"nodes=x", `nodes: want a count such as 3 or a percentage such as 10%, got "x"`},
		{"nodes=-1", "must not be negative"},
		{"nodes=120%", "at most 100%"},
		{"nodes=1;schedule=0 1 * * *", "schedule and duration go together"},
		{"nodes=1;schedule=61 * * * *;duration=1h", `schedule: "61 * * * *"`},
		{"nodes=1;schedule=@daily;duration=-1h", `duration: must be positive, got "-1h"`},
		{"nodes=1;groups=(", `groups: "(" is not a regular expression`},
		{"nodes=1;zone=a", `unknown key "zone"`},
		{"nodes=1;nodes=2", `key "nodes" given twice`},
		{"nodes", `"nodes": want key=value`},
	} {
		_, err := disruption.ParseBudget(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("ParseBudget(%q) = %v, want an error naming the budget and %q", tc.in, err, tc.want)
		}
	}
}

func TestParseWindow(t *testing.T) {
	if _, err := disruption.ParseWindow("schedule=@daily;duration=1h"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"groups=a", "schedule: required"},
		{"schedule=@daily", "schedule and duration go together"},
		{"nodes=1;schedule=@daily;duration=1h", `unknown key "nodes"`},
	} {
		if _, err := disruption.ParseWindow(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseWindow(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}
