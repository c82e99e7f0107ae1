package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/status"
)

// Shards are autoscalers that share a cluster with disjoint node groups
// (each with its own --nodes or auto-discovery, Lease and status
// ConfigMap). They never touch each other's nodes: each lists, taints,
// drains and deletes only the nodes of its own groups. A pending pod that
// groups of two shards could take would be scaled up by both, since
// neither sees the other's upcoming nodes; claims prevent it. A shard
// that scales up for pods writes their UIDs, with the groups and the time,
// under ClaimsKey of its status ConfigMap, and keeps each claim while the
// pod stays pending, for at most --max-node-provision-time. Before each
// loop it reads the claims of its peers (Sharding.Peers) and leaves the
// pods they claim out of its scale-up, with an event on each
// (ScaleUpClaimedByShard). Two shards deciding in the very same instant
// can still both scale up once; the claims end it within a loop.

// ClaimsKey is the key of a shard's claims in its status ConfigMap.
const ClaimsKey = "scale-up-claims"

// MaxClaims bounds the pods one shard claims, so the claims stay small
// beside the status document; pods beyond it (the newest) are not claimed.
const MaxClaims = 2000

// Sharding configures how this autoscaler coordinates with the others.
type Sharding struct {
	// Peers are the status ConfigMaps of the other shards, in
	// Options.Namespace (--shard-peer-status-config-map, repeatable).
	// When set, this autoscaler also publishes its own claims.
	Peers []string
}

// claimSet is the claims one shard publishes: scale-ups, each with its
// time, its groups and the UIDs of its pods.
type claimSet struct {
	Claims []claim `json:"claims"`
}

type claim struct {
	Since time.Time `json:"since"`
	// Until is when the claim lapses: the latest deadline of its
	// scale-ups, each group's own max node provision time. Claims written
	// without it lapse --max-node-provision-time after Since.
	Until  time.Time   `json:"until,omitzero"`
	Groups []string    `json:"groups"`
	Pods   []types.UID `json:"pods"`
}

// lapsed tells whether the claim no longer holds at now; ttl is the
// reader's --max-node-provision-time, for claims without Until.
func (cl *claim) lapsed(now time.Time, ttl time.Duration) bool {
	if !cl.Until.IsZero() {
		return now.After(cl.Until)
	}
	return now.Sub(cl.Since) > ttl
}

// peerClaim is what a peer says about one pod.
type peerClaim struct {
	peer   string
	groups []string
	since  time.Time
}

// shardState is this shard's own claims (loop goroutine only).
type shardState struct {
	own []claim
}

// readPeerClaims returns the live claims of every peer, by pod UID. A peer
// whose ConfigMap cannot be read claims nothing this loop (logged): it may
// not run yet.
func (c *Controller) readPeerClaims(ctx context.Context, now time.Time) map[types.UID]peerClaim {
	out := map[types.UID]peerClaim{}
	ttl := c.opts.Autoscaler.ClusterState.MaxNodeProvisionTime
	for _, peer := range c.opts.Sharding.Peers {
		cm, err := c.client.CoreV1().ConfigMaps(c.opts.Namespace).Get(ctx, peer, metav1.GetOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				c.log.Warn("reading a peer shard's claims", "configMap", c.opts.Namespace+"/"+peer, "err", err)
			}
			continue
		}
		text := cm.Data[ClaimsKey]
		if text == "" {
			continue
		}
		var set claimSet
		if err := json.Unmarshal([]byte(text), &set); err != nil {
			c.log.Warn("a peer shard's claims do not parse; ignoring them", "configMap", c.opts.Namespace+"/"+peer, "key", ClaimsKey, "err", err)
			continue
		}
		for _, cl := range set.Claims {
			if cl.lapsed(now, ttl) {
				continue
			}
			for _, uid := range cl.Pods {
				out[uid] = peerClaim{peer: peer, groups: cl.Groups, since: cl.Since}
			}
		}
	}
	return out
}

// dropClaimed leaves the pods peers claimed out of pending, reporting each.
func (c *Controller) dropClaimed(pending []*v1.Pod, claims map[types.UID]peerClaim) []*v1.Pod {
	if len(claims) == 0 {
		return pending
	}
	kept := make([]*v1.Pod, 0, len(pending))
	dropped := 0
	for _, p := range pending {
		pc, ok := claims[p.UID]
		if !ok {
			kept = append(kept, p)
			continue
		}
		dropped++
		c.events.pod(status.Ref{Namespace: p.Namespace, Name: p.Name, UID: p.UID}, v1.EventTypeNormal, "ScaleUpClaimedByShard",
			fmt.Sprintf("the shard writing ConfigMap %s/%s scaled up node group(s) %v for this pod at %s; not scaled up again",
				c.opts.Namespace, pc.peer, pc.groups, pc.since.UTC().Format(time.RFC3339)), nil)
	}
	if dropped > 0 {
		c.log.Info("pending pods left to the peer shards that scaled up for them", "pods", dropped)
	}
	return kept
}

// updateClaims adds the pods this loop scaled up for, drops the claims of
// pods no longer pending and those past --max-node-provision-time, and
// returns the text to publish (a claim lapses at the latest deadline of
// its scale-ups, each group's own provision time).
func (c *Controller) updateClaims(now time.Time, pending []*v1.Pod, plan autoscaler.Plan) string {
	still := make(map[types.UID]bool, len(pending))
	for _, p := range pending {
		still[p.UID] = true
	}
	ttl := c.opts.Autoscaler.ClusterState.MaxNodeProvisionTime
	var kept []claim
	total := 0
	for _, cl := range c.shards.own {
		if cl.lapsed(now, ttl) {
			continue
		}
		pods := cl.Pods[:0:0]
		for _, uid := range cl.Pods {
			if still[uid] {
				pods = append(pods, uid)
			}
		}
		if len(pods) > 0 {
			cl.Pods = pods
			kept = append(kept, cl)
			total += len(pods)
		}
	}
	if st := plan.Status; len(st.ScaleUps) > 0 && total < MaxClaims {
		groups := map[string]bool{}
		var until time.Time
		for _, su := range st.ScaleUps {
			groups[su.Group] = true
			if su.Deadline.After(until) {
				until = su.Deadline.UTC()
			}
		}
		cl := claim{Since: now.UTC(), Until: until, Groups: slices.Sorted(maps.Keys(groups))}
		for _, r := range st.Triggered {
			if r.UID != "" && total < MaxClaims {
				cl.Pods = append(cl.Pods, r.UID)
				total++
			}
		}
		if len(cl.Pods) > 0 {
			kept = append(kept, cl)
		}
	}
	c.shards.own = kept
	data, err := json.Marshal(claimSet{Claims: kept})
	if err != nil {
		return "" // plain data always marshals
	}
	return string(data)
}
