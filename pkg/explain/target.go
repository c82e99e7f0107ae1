package explain

import (
	"fmt"
	"strings"
)

// Kind is what explain answers about.
type Kind string

// The kinds, named as the text output names them.
const (
	KindPod       Kind = "pod"
	KindNode      Kind = "node"
	KindHPA       Kind = "hpa"
	KindNodeGroup Kind = "nodegroup"
	KindCluster   Kind = "cluster"
)

// kindOf reads a kind as kubectl users write it: singular, plural, short
// name, or the full resource name.
func kindOf(s string) (Kind, bool) {
	switch strings.ToLower(s) {
	case "pod", "pods", "po":
		return KindPod, true
	case "node", "nodes", "no":
		return KindNode, true
	case "hpa", "hpas", "horizontalpodautoscaler", "horizontalpodautoscalers",
		"horizontalpodautoscaler.autoscaling", "horizontalpodautoscalers.autoscaling":
		return KindHPA, true
	case "nodegroup", "nodegroups", "ng":
		return KindNodeGroup, true
	case "cluster":
		return KindCluster, true
	}
	return "", false
}

// namespaced reports whether objects of the kind live in a namespace.
func (k Kind) namespaced() bool { return k == KindPod || k == KindHPA }

// plural names the kind in messages: "pods", "nodes".
func (k Kind) plural() string {
	if k == KindHPA {
		return "HorizontalPodAutoscalers"
	}
	if k == KindNodeGroup {
		return "node groups"
	}
	if k == KindCluster {
		return "cluster-wide answers"
	}
	return string(k) + "s"
}

// kinds lists what explain answers about, for error messages.
const kinds = "pod, node, hpa, nodegroup or cluster"

// Target is one object to explain.
type Target struct {
	Kind Kind
	// Namespace is set for pods and HPAs.
	Namespace string
	// Name is empty for the cluster.
	Name string
	// NamespaceFromFlag is true when -n/--namespace chose the namespace.
	NamespaceFromFlag bool
}

// String is how answers name the target: "pod default/web", "node n1".
func (t Target) String() string {
	switch {
	case t.Kind == KindCluster:
		return "cluster"
	case t.Kind.namespaced():
		return string(t.Kind) + " " + t.Namespace + "/" + t.Name
	}
	return string(t.Kind) + " " + t.Name
}

// Namespace is the -n/--namespace flag: its value (the kubeconfig
// context's namespace when not given) and whether it was given.
type Namespace struct {
	Value string
	Set   bool
}

// ParseTargets reads explain's arguments the way kubectl reads its own:
//
//	pod NAME [NAME...]       pods NAME, po NAME
//	pod/NAME [node/NAME...]  TYPE/NAME, one or more, kinds may mix
//	nodegroup NAME           nodegroup/NAME, ng/NAME
//	cluster
//
// The namespace of pods and HPAs is -n/--namespace. gpuscale's earlier
// form, a kind then NAMESPACE/NAME (pod default/web), is still read when
// it is unambiguous: NAMESPACE is not itself a kind (pod/web would mean
// TYPE/NAME) and does not contradict -n.
func ParseTargets(args []string, ns Namespace) ([]Target, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("say what to explain: %s, for example: explain pod/web-0 -n default", kinds)
	}
	if strings.Contains(args[0], "/") {
		return typeSlashName(args, ns)
	}
	kind, ok := kindOf(args[0])
	if !ok {
		return nil, fmt.Errorf("%q: explain answers about a %s", args[0], kinds)
	}
	names := args[1:]
	if kind == KindCluster {
		if len(names) > 0 {
			return nil, fmt.Errorf("explain cluster takes no name, got %q", strings.Join(names, " "))
		}
		if err := clusterScopedNamespace(kind, ns); err != nil {
			return nil, err
		}
		return []Target{{Kind: KindCluster}}, nil
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("explain %s needs a name: explain %s NAME", args[0], args[0])
	}
	if err := clusterScopedNamespace(kind, ns); err != nil {
		return nil, err
	}
	out := make([]Target, 0, len(names))
	for _, n := range names {
		t, err := kindThenName(kind, n, ns)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// typeSlashName reads TYPE/NAME arguments.
func typeSlashName(args []string, ns Namespace) ([]Target, error) {
	out := make([]Target, 0, len(args))
	for _, a := range args {
		typ, name, found := strings.Cut(a, "/")
		if !found {
			return nil, fmt.Errorf("%q: name every object as TYPE/NAME when the first is (%s); or write the type once: explain pod NAME NAME", a, args[0])
		}
		kind, ok := kindOf(typ)
		switch {
		case !ok && typ != "" && name != "" && !strings.Contains(name, "/"):
			return nil, fmt.Errorf("%q: %q is not a %s; for a pod in namespace %s write: explain pod/%s -n %s", a, typ, kinds, typ, name, typ)
		case !ok:
			return nil, fmt.Errorf("%q: %q is not a %s", a, typ, kinds)
		case kind == KindCluster:
			return nil, fmt.Errorf("%q: the cluster has no name: explain cluster", a)
		case name == "":
			return nil, fmt.Errorf("%q: the name is missing after %q", a, typ+"/")
		case strings.Contains(name, "/"):
			return nil, fmt.Errorf("%q: a name cannot contain \"/\"; the namespace is -n: explain %s/%s -n %s", a, typ, name[strings.LastIndex(name, "/")+1:], name[:strings.Index(name, "/")])
		}
		if err := clusterScopedNamespace(kind, ns); err != nil {
			return nil, err
		}
		out = append(out, target(kind, name, ns))
	}
	return out, nil
}

// kindThenName reads one NAME after a kind: NAME, or the earlier
// NAMESPACE/NAME when unambiguous.
func kindThenName(kind Kind, arg string, ns Namespace) (Target, error) {
	prefix, name, found := strings.Cut(arg, "/")
	if !found {
		return target(kind, arg, ns), nil
	}
	switch {
	case !kind.namespaced():
		return Target{}, fmt.Errorf("%q: %s have no namespace; write the name alone", arg, kind.plural())
	case prefix == "" || name == "" || strings.Contains(name, "/"):
		return Target{}, fmt.Errorf("%q: want NAME (the namespace is -n), or NAMESPACE/NAME", arg)
	}
	if _, isKind := kindOf(prefix); isKind {
		return Target{}, fmt.Errorf("%q is ambiguous after %q: TYPE/NAME or NAMESPACE/NAME? write explain %s %s -n NAMESPACE, or explain %s alone",
			arg, string(kind), string(kind), name, arg)
	}
	if ns.Set && ns.Value != prefix {
		return Target{}, fmt.Errorf("%q names namespace %q but -n/--namespace says %q: -n is the %s's namespace (the autoscaler's own namespace is --autoscaler-namespace)",
			arg, prefix, ns.Value, string(kind))
	}
	return Target{Kind: kind, Namespace: prefix, Name: name, NamespaceFromFlag: ns.Set}, nil
}

func target(kind Kind, name string, ns Namespace) Target {
	t := Target{Kind: kind, Name: name}
	if kind.namespaced() {
		t.Namespace, t.NamespaceFromFlag = ns.Value, ns.Set
	}
	return t
}

// clusterScopedNamespace refuses -n for kinds without a namespace: most
// likely the flag's earlier meaning, the autoscaler's namespace.
func clusterScopedNamespace(kind Kind, ns Namespace) error {
	if kind.namespaced() || !ns.Set {
		return nil
	}
	return fmt.Errorf("-n/--namespace %q: %s have no namespace; -n names the namespace of pods and HPAs, and the autoscaler's own namespace (what --namespace meant before) is --autoscaler-namespace",
		ns.Value, kind.plural())
}
