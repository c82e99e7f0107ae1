package kwok

import (
	"testing"
)

// FuzzParseConfig: the kwok provider's configuration (file or ConfigMap)
// never panics the reader, and what it accepts validates again.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		exampleConfig, "", "null", "nodeGroups: []\n", "nodeGroups: [{name: a, maxSize: 1, template: {capacity: {cpu: 1, memory: 1Gi}}}]\n",
		"nodeGroups: [{name: a, minSize: 2, maxSize: 1}]\n", "provisioningDelay: -1s\n",
		"nodeGroups: [{name: a, maxSize: 1, pricePerHour: .nan, template: {capacity: {cpu: 1, memory: 1Gi, nvidia.com/gpu: 500m}}}]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted, then invalid: %v", err)
		}
	})
}
