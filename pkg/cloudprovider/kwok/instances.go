package kwok

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// ProviderIDPrefix starts the providerID of every node the provider
// makes: kwok://<node name>.
const ProviderIDPrefix = "kwok://"

// instanceOf is a registered node as an instance: its own providerID (a
// node made by hand may carry another) and its creation time.
func instanceOf(n *v1.Node) snapshot.Instance {
	id := n.Spec.ProviderID
	if id == "" {
		id = ProviderIDPrefix + n.Name
	}
	return snapshot.Instance{ProviderID: id, State: snapshot.InstanceRunning, CreatedAt: n.CreationTimestamp.Time}
}

// instancesLocked lists a group's instances at now: its registered nodes
// and its pending creations, by providerID. A pending creation is Creating
// until its time comes and Running after (an instance that booted and has
// not registered yet, or never will: Faults.NeverRegister); it was created
// when the scale-up asked for it.
func (p *Provider) instancesLocked(group string, now time.Time) []snapshot.Instance {
	var out []snapshot.Instance
	for name := range p.registered[group] {
		inst, ok := p.nodeInstances[name]
		if !ok {
			inst = snapshot.Instance{ProviderID: ProviderIDPrefix + name}
		}
		out = append(out, inst)
	}
	for _, pn := range p.pending {
		if pn.Group != group || p.registered[group][pn.Name] || pn.Failed {
			continue
		}
		st := snapshot.InstanceCreating
		if !pn.CreateAt.After(now) {
			st = snapshot.InstanceRunning
		}
		created := pn.RequestedAt
		if created.IsZero() {
			created = pn.CreateAt.Add(-p.cfg.ProvisioningDelay)
		}
		out = append(out, snapshot.Instance{ProviderID: ProviderIDPrefix + pn.Name, State: st, CreatedAt: created})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProviderID < out[j].ProviderID })
	return out
}
