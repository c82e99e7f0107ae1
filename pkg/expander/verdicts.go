package expander

import (
	"fmt"
	"sort"

	"github.com/gpuscale/gpuscale/pkg/snapshot"
)

// Verdict says what the chain made of one option: chosen, dropped by an
// expander (with the option's score there and the best one), or lost the
// final random tie-break.
type Verdict struct {
	Group              string
	NodeCount          int
	PodCount           int
	Chosen             bool
	Expander           string
	Score, BestScore   string
	LostRandomTieBreak bool
}

// Message says the verdict for people.
func (v Verdict) Message() string {
	switch {
	case v.Chosen:
		return "chosen"
	case v.LostRandomTieBreak:
		return "tied with the chosen group; lost the random tie-break"
	case v.Score != "":
		return fmt.Sprintf("dropped by %s: %s, the best had %s", v.Expander, v.Score, v.BestScore)
	}
	return "dropped by " + v.Expander
}

// describer is a strategy that can say an option's score.
type describer interface {
	describe(o *Option) string
}

// ChooseExplained is Choose, also saying for every option what the chain
// made of it, in the order the options were given.
func (c *Chain) ChooseExplained(options []Option) (Option, bool, []Verdict) {
	if len(options) == 0 {
		return Option{}, false, nil
	}
	verdicts := map[string]*Verdict{}
	for i := range options {
		o := &options[i]
		verdicts[o.Group.ID] = &Verdict{Group: o.Group.ID, NodeCount: o.NodeCount, PodCount: o.PodCount}
	}
	best := append([]Option(nil), options...)
	sort.SliceStable(best, func(i, j int) bool { return best[i].Group.ID < best[j].Group.ID })
	for _, s := range c.strategies {
		if len(best) == 1 {
			break
		}
		kept := s.BestOptions(best)
		in := map[string]bool{}
		for i := range kept {
			in[kept[i].Group.ID] = true
		}
		d, scores := s.(describer)
		for i := range best {
			o := &best[i]
			if in[o.Group.ID] {
				continue
			}
			v := verdicts[o.Group.ID]
			v.Expander = s.Name()
			if scores {
				v.Score, v.BestScore = d.describe(o), d.describe(&kept[0])
			}
		}
		best = kept
	}
	chosen := best[c.rng.Intn(len(best))]
	for i := range best {
		v := verdicts[best[i].Group.ID]
		v.Chosen = best[i].Group.ID == chosen.Group.ID
		v.LostRandomTieBreak = !v.Chosen
	}
	out := make([]Verdict, len(options))
	for i := range options {
		out[i] = *verdicts[options[i].Group.ID]
	}
	return chosen, true, out
}

func (mostPods) describe(o *Option) string   { return fmt.Sprintf("%d pods", o.PodCount) }
func (leastNodes) describe(o *Option) string { return fmt.Sprintf("%d nodes", o.NodeCount) }
func (leastWaste) describe(o *Option) string {
	return fmt.Sprintf("waste %.3f", leastWaste{}.score(o))
}
func (price) describe(o *Option) string {
	if room := snapshot.ReservedRoom(o.Group); room > 0 {
		return fmt.Sprintf("$%.4f/h per pod, %d of %d node(s) reserved", price{}.score(o), min(room, o.NodeCount), o.NodeCount)
	}
	if o.Group.PricePerHour <= 0 {
		return "no price"
	}
	return fmt.Sprintf("$%.4f/h per pod", price{}.score(o))
}
func (p *Priorities) describe(o *Option) string {
	if prio, ok := p.Priority(o.Group.ID); ok {
		return fmt.Sprintf("priority %d", prio)
	}
	return "no priority"
}
