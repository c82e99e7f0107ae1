package aws

import (
	"fmt"
	"strings"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// TagAutoscalingOptions prefixes the upstream Cluster Autoscaler's per-group
// options: k8s.io/cluster-autoscaler/node-template/autoscaling-options/<key>
// (keys in cloudprovider.GroupOptionKeys), each overriding the flag of the
// same name for the group's nodes.
const TagAutoscalingOptions = TagNodeTemplate + "autoscaling-options/"

// readOptions parses g's autoscaling-options tags into g.options. A bad
// tag is an error naming the group, the tag and its value; the group then
// runs on the cluster's options, none of its own. Upstream options that
// gpuscale does not apply are logged.
func (p *Provider) readOptions(g *group) error {
	values := map[string]string{}
	for k, v := range g.tags {
		if key, ok := strings.CutPrefix(k, TagAutoscalingOptions); ok {
			values[key] = v
		}
	}
	opts, unsupported, err := cloudprovider.ParseGroupOptions(values)
	for _, k := range unsupported {
		p.log.Warn("aws node group tag not applied", "group", g.name, "tag", TagAutoscalingOptions+k)
	}
	if err != nil {
		return fmt.Errorf("aws: node group %s: tag %s...: %w; the group runs on the cluster's options", g.name, TagAutoscalingOptions, err)
	}
	g.options = opts
	return nil
}

// cached returns the cached group of that name, or nil.
func (p *Provider) cached(name string) *group {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.groups[name]
}
