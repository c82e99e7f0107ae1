package expander

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// PriorityConfigMapName is the ConfigMap the priority expander reads, in the
// autoscaler's namespace, under the key "priorities".
const PriorityConfigMapName = "cluster-autoscaler-priority-expander"

// PriorityKeys returns the ConfigMap keys read, in order: the upstream key,
// and the singular form some guides print.
func PriorityKeys() []string { return []string{"priorities", "priority"} }

// Priorities map integers to regular expressions on node-group names; a
// group takes the highest priority with an expression that matches in its
// name (unanchored, as upstream matches).
type Priorities struct {
	levels []priorityLevel // highest first
	// text is the configuration parsed, for Equal and for records.
	text string
}

type priorityLevel struct {
	priority int
	patterns []*regexp.Regexp
}

// ParsePriorities parses the YAML of the ConfigMap value:
//
//	10:
//	  - .*p2-node-group.*
//	50:
//	  - .*p3-node-group.*
//
// An error names the line and the value at fault.
func ParsePriorities(text string) (*Priorities, error) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(text), &root); err != nil {
		return nil, fmt.Errorf("%s: %w", PriorityConfigMapName, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: no priorities", PriorityConfigMapName)
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: line %d: want a map of priority to list of expressions", PriorityConfigMapName, m.Line)
	}
	p := &Priorities{text: text}
	firstLine := map[int]int{} // priority -> the line that gave it
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s: line %d: a priority must be an integer, got %s", PriorityConfigMapName, k.Line, kindName(k))
		}
		prio, err := strconv.Atoi(k.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: priority %q is not an integer", PriorityConfigMapName, k.Line, k.Value)
		}
		if line, dup := firstLine[prio]; dup {
			return nil, fmt.Errorf("%s: line %d: priority %d is given twice (first on line %d); list all its expressions under one key",
				PriorityConfigMapName, k.Line, prio, line)
		}
		firstLine[prio] = k.Line
		level, err := parseLevel(prio, v)
		if err != nil {
			return nil, err
		}
		p.levels = append(p.levels, level)
	}
	sort.SliceStable(p.levels, func(i, j int) bool { return p.levels[i].priority > p.levels[j].priority })
	return p, nil
}

// parseLevel reads one priority's list. Every item must be a non-empty
// string: a nested list, a map or a null item would otherwise turn into an
// empty expression, which matches every group.
func parseLevel(prio int, v *yaml.Node) (priorityLevel, error) {
	if v.Kind != yaml.SequenceNode {
		return priorityLevel{}, fmt.Errorf("%s: line %d: priority %d: want a list of expressions", PriorityConfigMapName, v.Line, prio)
	}
	level := priorityLevel{priority: prio}
	for _, e := range v.Content {
		if e.Kind != yaml.ScalarNode || e.Tag == "!!null" || e.Value == "" {
			return priorityLevel{}, fmt.Errorf("%s: line %d: priority %d: want a regular expression (a non-empty string), got %s",
				PriorityConfigMapName, e.Line, prio, kindName(e))
		}
		re, err := regexp.Compile(e.Value)
		if err != nil {
			return priorityLevel{}, fmt.Errorf("%s: line %d: expression %q: %v", PriorityConfigMapName, e.Line, e.Value, err)
		}
		level.patterns = append(level.patterns, re)
	}
	return level, nil
}

// kindName says what a YAML node is, for messages.
func kindName(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a map"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	case n.Tag == "!!null" || n.Value == "":
		return "nothing (an empty item)"
	}
	return fmt.Sprintf("%q", n.Value)
}

// Priority returns the priority of a group name and whether any expression matched.
func (p *Priorities) Priority(group string) (int, bool) {
	for _, l := range p.levels {
		for _, re := range l.patterns {
			if re.MatchString(group) {
				return l.priority, true
			}
		}
	}
	return 0, false
}

// Name is the strategy's flag name.
func (p *Priorities) Name() string { return "priority" }

// BestOptions keeps the options of the highest matching priority; groups
// that match no expression are considered only when none match.
func (p *Priorities) BestOptions(options []Option) []Option {
	var best []Option
	bestPrio := 0
	for _, o := range options {
		prio, ok := p.Priority(o.Group.ID)
		switch {
		case !ok:
		case len(best) == 0 || prio > bestPrio:
			best, bestPrio = []Option{o}, prio
		case prio == bestPrio:
			best = append(best, o)
		}
	}
	if len(best) == 0 {
		return options
	}
	return best
}

// Equal tells whether p and q were parsed from the same text; nil equals
// only nil.
func (p *Priorities) Equal(q *Priorities) bool {
	if p == nil || q == nil {
		return p == q
	}
	return p.text == q.text
}

// MarshalJSON writes the configuration as the text it was parsed from, so
// that a loop record holds it as the ConfigMap did.
func (p *Priorities) MarshalJSON() ([]byte, error) { return json.Marshal(p.text) }

// UnmarshalJSON parses the text MarshalJSON wrote.
func (p *Priorities) UnmarshalJSON(b []byte) error {
	var text string
	if err := json.Unmarshal(b, &text); err != nil {
		return fmt.Errorf("%s: want the configuration as a string: %w", PriorityConfigMapName, err)
	}
	q, err := ParsePriorities(text)
	if err != nil {
		return err
	}
	*p = *q
	return nil
}

// String lists the levels, highest first.
func (p *Priorities) String() string {
	var b strings.Builder
	for _, l := range p.levels {
		fmt.Fprintf(&b, "%d:", l.priority)
		for _, re := range l.patterns {
			b.WriteString(" " + re.String())
		}
		b.WriteString("; ")
	}
	return strings.TrimSuffix(b.String(), "; ")
}
