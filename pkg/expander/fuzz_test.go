package expander

import (
	"strings"
	"testing"
)

// FuzzParsePriorities feeds the priority ConfigMap's parser arbitrary
// text: it must never panic, and what it accepts must hold no empty
// expression (which would match every group) and give each priority once.
func FuzzParsePriorities(f *testing.F) {
	for _, seed := range []string{
		"10:\n  - .*p2-node-group.*\n50:\n  - .*p3-node-group.*\n",
		"1:\n  - ^a$\n  - b\n",
		"-5:\n  - x\n0:\n  - y\n",
		"10: []\n",
		"10:\n  - [a, b]\n",
		"10:\n  - name: x\n",
		"10:\n  -\n",
		"10:\n  - a\n010:\n  - b\n",
		"ten:\n  - .*\n",
		"10: .*\n",
		"10: [\n",
		"",
		"null",
		"# comment only\n",
		"&a 10:\n  - *a\n",
		"10:\n  - \"([bad\"\n",
		"99999999999999999999:\n  - x\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParsePriorities(text)
		if err != nil {
			if !strings.Contains(err.Error(), PriorityConfigMapName) {
				t.Fatalf("error does not name the ConfigMap: %v", err)
			}
			return
		}
		seen := map[int]bool{}
		for _, l := range p.levels {
			if seen[l.priority] {
				t.Fatalf("priority %d accepted twice from %q", l.priority, text)
			}
			seen[l.priority] = true
			for _, re := range l.patterns {
				if re.String() == "" {
					t.Fatalf("an empty expression (matching every group) was accepted from %q", text)
				}
			}
		}
		p.Priority("any-group")
	})
}
