// Package expander chooses which node group to grow when several could take
// the pending pods. Strategies are chained (--expander=priority,least-waste):
// each keeps the options it likes best and hands them to the next; a seeded
// random pick breaks the last tie, so a given seed always chooses the same.
package expander

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"

	"github.com/gpuscale/gpuscale/pkg/gpu"
	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Option is one way to scale up: add NodeCount nodes to Group, which would
// schedule PodCount of the pending pods.
type Option struct {
	Group     *snapshot.NodeGroup
	NodeCount int
	PodCount  int
	// Requested sums the requests of the pods the new nodes would take.
	Requested snapshot.Resource
	// DeviceUnitsOffered is what one new node offers as DRA accelerator
	// devices, and DeviceUnitsTaken what the pods' claims take of them, in
	// whole-device equivalents (dra.Units); both zero for groups without
	// DRA devices.
	DeviceUnitsOffered, DeviceUnitsTaken float64
}

// Capacity is the allocatable of the option's new nodes together.
func (o *Option) Capacity() snapshot.Resource {
	r := snapshot.ResourceFromList(o.Group.Template.Status.Allocatable)
	out := snapshot.Resource{}
	for i := 0; i < o.NodeCount; i++ {
		out.AddResource(&r, 1)
	}
	return out
}

// Strategy keeps the best of the options. It never returns an empty list
// for a non-empty input.
type Strategy interface {
	Name() string
	BestOptions(options []Option) []Option
}

// Names returns the strategies in the order the flag help shows them.
func Names() []string {
	return []string{"random", "most-pods", "least-waste", "least-nodes", "price", "priority"}
}

// Chain applies strategies in order and breaks the final tie at random.
type Chain struct {
	strategies []Strategy
	rng        *rand.Rand
}

// Config is what building a chain needs besides the names.
type Config struct {
	// Priorities is the parsed priority ConfigMap; required by "priority".
	Priorities *Priorities
	// Seed drives the random tie-break.
	Seed int64
}

// NewChain parses a comma-separated --expander value.
func NewChain(spec string, cfg Config) (*Chain, error) {
	c := &Chain{rng: rand.New(rand.NewSource(cfg.Seed))}
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "random":
			// The final tie-break already is random.
		case "most-pods":
			c.strategies = append(c.strategies, mostPods{})
		case "least-waste":
			c.strategies = append(c.strategies, leastWaste{})
		case "least-nodes":
			c.strategies = append(c.strategies, leastNodes{})
		case "price":
			c.strategies = append(c.strategies, price{})
		case "priority":
			if cfg.Priorities == nil {
				return nil, fmt.Errorf("--expander: priority needs the %s ConfigMap", PriorityConfigMapName)
			}
			c.strategies = append(c.strategies, cfg.Priorities)
		default:
			return nil, fmt.Errorf("--expander: unknown expander %q (known: %s)", name, strings.Join(Names(), ", "))
		}
	}
	return c, nil
}

// Choose picks one option, or reports false when there is none.
func (c *Chain) Choose(options []Option) (Option, bool) {
	if len(options) == 0 {
		return Option{}, false
	}
	best := append([]Option(nil), options...)
	sort.SliceStable(best, func(i, j int) bool { return best[i].Group.ID < best[j].Group.ID })
	for _, s := range c.strategies {
		if len(best) == 1 {
			break
		}
		best = s.BestOptions(best)
	}
	return best[c.rng.Intn(len(best))], true
}

// keepBest keeps the options with the lowest score.
func keepBest(options []Option, score func(*Option) float64) []Option {
	var best []Option
	bestScore := 0.0
	for i := range options {
		s := score(&options[i])
		switch {
		case len(best) == 0 || s < bestScore:
			best, bestScore = []Option{options[i]}, s
		case s == bestScore:
			best = append(best, options[i])
		}
	}
	return best
}

type mostPods struct{}

func (mostPods) Name() string { return "most-pods" }
func (mostPods) BestOptions(o []Option) []Option {
	return keepBest(o, func(x *Option) float64 { return -float64(x.PodCount) })
}

type leastNodes struct{}

func (leastNodes) Name() string { return "least-nodes" }
func (leastNodes) BestOptions(o []Option) []Option {
	return keepBest(o, func(x *Option) float64 { return float64(x.NodeCount) })
}

// leastWaste keeps the options that leave the smallest idle fraction of cpu
// and memory (and accelerators, when the template has them) on the new
// nodes. Accelerators are compared in whole-device equivalents, so a group
// of MIG 1g.10gb slices wastes less for 1g.10gb pods than a group of whole
// GPUs (gpu.Scale), and DRA devices count as the pods' claims take them.
type leastWaste struct{}

func (leastWaste) Name() string                      { return "least-waste" }
func (s leastWaste) BestOptions(o []Option) []Option { return keepBest(o, s.score) }

func (leastWaste) score(x *Option) float64 {
	capacity := x.Capacity()
	w := waste(float64(x.Requested.MilliCPU), float64(capacity.MilliCPU)) +
		waste(float64(x.Requested.Memory), float64(capacity.Memory))
	sc := gpu.ScaleOf(x.Group.Template)
	offered := sc.Offered(capacity.Scalar) + x.DeviceUnitsOffered*float64(x.NodeCount)
	if offered > 0 {
		w += waste(sc.Units(x.Requested.Scalar)+x.DeviceUnitsTaken, offered)
	}
	return w
}

func waste(req, capacity float64) float64 {
	if capacity <= 0 {
		return 0
	}
	return (capacity - req) / capacity
}

// price keeps the options that cost least per pod scheduled. Groups with no
// price lose to priced ones; spot groups win when their price is lower,
// which their price already says. Nodes a group's capacity reservation
// still has room for (snapshot.ReservedRoom) are already paid for and
// cost nothing, so a reserved group is grown first; the nodes past its
// reservation cost its price. An option that fits in the reservation
// counts as priced even when the group has no price.
type price struct{}

func (price) Name() string { return "price" }
func (s price) BestOptions(o []Option) []Option {
	priced := o[:0:0]
	for _, x := range o {
		if x.Group.PricePerHour > 0 || x.NodeCount <= snapshot.ReservedRoom(x.Group) {
			priced = append(priced, x)
		}
	}
	if len(priced) == 0 {
		return o
	}
	return keepBest(priced, s.score)
}

func (price) score(x *Option) float64 {
	paid := max(0, x.NodeCount-snapshot.ReservedRoom(x.Group))
	return float64(paid) * x.Group.PricePerHour / float64(max(x.PodCount, 1))
}
