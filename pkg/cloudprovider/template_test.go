package cloudprovider

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestTemplateNodeNamesAreValidLabelValues(t *testing.T) {
	for _, group := range []string{
		"gpu-a10g",
		"https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instanceGroups/gke-c-gpu-pool-1a2b-grp",
		"eks-GPU_Nodes 2024",
		strings.Repeat("very-long-group-name-", 5),
	} {
		n := TemplateNode(TemplateSpec{Group: group})
		if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
			t.Errorf("group %q: node name %q: %v", group, n.Name, errs)
		}
		if errs := validation.IsValidLabelValue(n.Labels[v1.LabelHostname]); len(errs) > 0 {
			t.Errorf("group %q: hostname label %q: %v", group, n.Labels[v1.LabelHostname], errs)
		}
	}
	if got := TemplateNode(TemplateSpec{Group: "https://x/instanceGroups/gpu-pool"}).Name; got != "template-gpu-pool" {
		t.Errorf("URL group: name %q, want the instance group's own name", got)
	}
}
