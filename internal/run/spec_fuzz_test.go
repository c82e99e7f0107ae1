package run

import (
	"strings"
	"testing"
)

// FuzzParseNodeGroup: --nodes values never panic the reader, and what it
// accepts is a group with a name and 0 <= min <= max.
func FuzzParseNodeGroup(f *testing.F) {
	for _, seed := range []string{
		"1:10:gpu-asg", "0:0:x", "0:8:https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instanceGroups/g",
		"1:2", "a:b:c", "-1:2:x", "3:2:x", "1:2:", ":::", "9999999999999999999:1:x", " 1:2:x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		g, err := parseNodeGroup(value)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--nodes: ") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		if g.Name == "" || g.Min < 0 || g.Min > g.Max {
			t.Fatalf("accepted %+v from %q", g, value)
		}
	})
}

// FuzzParseAutoDiscovery: --node-group-auto-discovery values never panic
// the reader, and what it accepts is complete for its kind.
func FuzzParseAutoDiscovery(f *testing.F) {
	for _, seed := range []string{
		"asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod", "asg:tag=team=ml,env",
		"mig:namePrefix=gke-prod-gpu,min=0,max=8", "mig:namePrefix=,min=0,max=8", "mig:min=0,max=8", "asg:tag=",
		"asg:x", "mig:namePrefix=a,min=2,max=1", "label:x=y", ":",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		s, err := parseAutoDiscovery(value)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--node-group-auto-discovery: ") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		switch s.Kind {
		case "asg":
			if len(s.Tags) == 0 {
				t.Fatalf("accepted %+v from %q", s, value)
			}
			for k := range s.Tags {
				if k == "" {
					t.Fatalf("accepted an empty tag key from %q", value)
				}
			}
		case "mig":
			if s.NamePrefix == "" || s.MinSize < 0 || s.MaxSize < s.MinSize {
				t.Fatalf("accepted %+v from %q", s, value)
			}
		default:
			t.Fatalf("accepted kind %q from %q", s.Kind, value)
		}
	})
}
