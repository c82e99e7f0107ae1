package app

import (
	"strings"
	"testing"
)

// FuzzParseNodes: --nodes values never panic the reader, and what it
// accepts are groups with a name and 0 <= min <= max, each name once.
func FuzzParseNodes(f *testing.F) {
	for _, seed := range []string{
		"1:10:gpu-asg", "0:0:x", "0:8:https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instanceGroups/g",
		"1:2", "a:b:c", "-1:2:x", "3:2:x", "1:2:", ":::", "9999999999999999999:1:x", "1:2:x\n1:2:x", " 1:2:x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, values string) {
		list := strings.Split(values, "\n")
		groups, err := parseNodes(list)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--nodes: ") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, g := range groups {
			if g.Name == "" || g.Min < 0 || g.Min > g.Max || seen[g.Name] {
				t.Fatalf("accepted %+v from %q", g, list)
			}
			seen[g.Name] = true
		}
		if len(groups) != len(list) {
			t.Fatalf("%d values gave %d groups", len(list), len(groups))
		}
	})
}

// FuzzParseAutoDiscovery: --node-group-auto-discovery values never panic
// the reader, and what it accepts is complete for its kind and provider.
func FuzzParseAutoDiscovery(f *testing.F) {
	for _, seed := range []struct{ value, provider string }{
		{"asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod", "aws"},
		{"asg:tag=team=ml,env", "aws"},
		{"mig:namePrefix=gke-prod-gpu,min=0,max=8", "gce"},
		{"mig:namePrefix=,min=0,max=8", "gce"}, {"mig:min=0,max=8", "gce"}, {"asg:tag=", "aws"}, {"asg:x", "aws"},
		{"mig:namePrefix=a,min=2,max=1", "gce"}, {"asg:tag=a", "gce"}, {"label:x=y", "kwok"}, {":", "aws"},
	} {
		f.Add(seed.value, seed.provider)
	}
	f.Fuzz(func(t *testing.T, value, provider string) {
		specs, err := parseAutoDiscovery([]string{value}, provider)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--node-group-auto-discovery: ") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		for _, s := range specs {
			switch s.Kind {
			case "asg":
				if provider != "aws" || len(s.Tags) == 0 {
					t.Fatalf("accepted %+v for provider %q from %q", s, provider, value)
				}
				for k := range s.Tags {
					if k == "" {
						t.Fatalf("accepted an empty tag key from %q", value)
					}
				}
			case "mig":
				if provider != "gce" || s.MinSize < 0 || s.MaxSize < s.MinSize {
					t.Fatalf("accepted %+v for provider %q from %q", s, provider, value)
				}
			default:
				t.Fatalf("accepted kind %q from %q", s.Kind, value)
			}
		}
	})
}
