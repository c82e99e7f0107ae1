package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// blockYAML writes v as block-style YAML with keys sorted, as
// sigs.k8s.io/yaml does, but in one pass over v's JSON: the general
// JSON-to-YAML conversion takes seconds for a document near the ConfigMap
// limit, far more than a loop may spend. Strings are written plain when
// they cannot be read as anything else, double-quoted (JSON escapes, which
// YAML reads the same) otherwise.
func blockYAML(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(data) + len(data)/4)
	writeNode(&b, toNode(tree), 0, false)
	return b.Bytes(), nil
}

// node is a JSON value: an object (keys sorted), an array, or a scalar
// kept as its YAML text.
type node struct {
	keys   []string
	values []*node
	items  []*node
	array  bool
	scalar string
}

func toNode(v any) *node {
	switch t := v.(type) {
	case map[string]any:
		n := &node{keys: make([]string, 0, len(t))}
		for k := range t {
			n.keys = append(n.keys, k)
		}
		sort.Strings(n.keys)
		n.values = make([]*node, len(n.keys))
		for i, k := range n.keys {
			n.values[i] = toNode(t[k])
		}
		return n
	case []any:
		n := &node{array: true, items: make([]*node, len(t))}
		for i, x := range t {
			n.items[i] = toNode(x)
		}
		return n
	case string:
		return &node{scalar: yamlString(t)}
	case json.Number:
		return &node{scalar: t.String()}
	case bool:
		return &node{scalar: fmt.Sprint(t)}
	}
	return &node{scalar: "null"}
}

func (n *node) empty() bool {
	return n.scalar == "" && ((n.array && len(n.items) == 0) || (!n.array && len(n.keys) == 0))
}

// writeNode writes n at indent; inItem is true for the first line of a
// sequence item, whose "- " already stands in front.
func writeNode(w io.StringWriter, n *node, indent int, inItem bool) {
	pad := strings.Repeat("  ", indent)
	switch {
	case n.array:
		for _, it := range n.items {
			w.WriteString(pad + "- ")
			if it.scalar != "" || it.empty() {
				w.WriteString(inline(it) + "\n")
				continue
			}
			writeNode(w, it, indent+1, true)
		}
	default:
		for i, k := range n.keys {
			v := n.values[i]
			if !(inItem && i == 0) {
				w.WriteString(pad)
			}
			w.WriteString(yamlString(k) + ":")
			switch {
			case v.scalar != "" || v.empty():
				w.WriteString(" " + inline(v) + "\n")
			case v.array:
				w.WriteString("\n")
				writeNode(w, v, indent, false)
			default:
				w.WriteString("\n")
				writeNode(w, v, indent+1, false)
			}
		}
	}
}

func inline(n *node) string {
	switch {
	case n.scalar != "":
		return n.scalar
	case n.array:
		return "[]"
	}
	return "{}"
}

// plainSafe: YAML reads the string back as the same string when written
// plain: a letter or underscore, then letters, digits and _ . / -; not a
// boolean or null.
func plainSafe(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '.' || c == '/' || c == '-')) {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

func yamlString(s string) string {
	if plainSafe(s) {
		return s
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
