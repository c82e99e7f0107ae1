package gce

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// kubeEnv is what a node template needs from the "kube-env" metadata GKE
// writes into instance templates.
type kubeEnv struct {
	Labels   map[string]string
	Taints   []v1.Taint
	Reserved v1.ResourceList
}

// parseKubeEnv reads kube-env, a YAML map of strings. Labels and taints
// come from AUTOSCALER_ENV_VARS (node_labels, node_taints, kube_reserved;
// semicolon separated) when it is present, else from NODE_LABELS and
// NODE_TAINTS. Every item is checked; an error names the key and the item.
func parseKubeEnv(data string) (kubeEnv, error) {
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal([]byte(data), &doc); err != nil {
		return kubeEnv{}, fmt.Errorf("kube-env: not a YAML map: %w", err)
	}
	get := func(key string) (string, error) {
		n, ok := doc[key]
		if !ok {
			return "", nil
		}
		if n.Kind != yaml.ScalarNode {
			return "", fmt.Errorf("kube-env %s: want a string, got YAML kind %d at line %d", key, n.Kind, n.Line)
		}
		return n.Value, nil
	}
	vars, err := get("AUTOSCALER_ENV_VARS")
	if err != nil {
		return kubeEnv{}, err
	}
	var labels, taints, reserved string
	labelsKey, taintsKey := "NODE_LABELS", "NODE_TAINTS"
	if vars != "" {
		fields, err := parseAutoscalerEnvVars(vars)
		if err != nil {
			return kubeEnv{}, err
		}
		labels, taints, reserved = fields["node_labels"], fields["node_taints"], fields["kube_reserved"]
		labelsKey, taintsKey = "AUTOSCALER_ENV_VARS node_labels", "AUTOSCALER_ENV_VARS node_taints"
	} else {
		if labels, err = get("NODE_LABELS"); err != nil {
			return kubeEnv{}, err
		}
		if taints, err = get("NODE_TAINTS"); err != nil {
			return kubeEnv{}, err
		}
	}
	var env kubeEnv
	if env.Labels, err = parseNodeLabels(labelsKey, labels); err != nil {
		return kubeEnv{}, err
	}
	if env.Taints, err = parseNodeTaints(taintsKey, taints); err != nil {
		return kubeEnv{}, err
	}
	if env.Reserved, err = parseReserved("AUTOSCALER_ENV_VARS kube_reserved", reserved); err != nil {
		return kubeEnv{}, err
	}
	return env, nil
}

// parseAutoscalerEnvVars splits "k1=v1;k2=v2"; values may hold "=" and ",".
func parseAutoscalerEnvVars(s string) (map[string]string, error) {
	out := map[string]string{}
	for i, item := range strings.Split(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("kube-env AUTOSCALER_ENV_VARS: item %d %q: want key=value", i+1, item)
		}
		out[k] = v
	}
	return out, nil
}

// parseNodeLabels reads "k=v,k2=v2"; keys and values must be valid labels.
func parseNodeLabels(key, s string) (map[string]string, error) {
	out := map[string]string{}
	for i, item := range splitList(s) {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("kube-env %s: item %d %q: want key=value", key, i+1, item)
		}
		if err := checkLabel(k, v); err != nil {
			return nil, fmt.Errorf("kube-env %s: item %d %q: %s", key, i+1, item, err)
		}
		if old, dup := out[k]; dup && old != v {
			return nil, fmt.Errorf("kube-env %s: item %d %q: label %s given twice with different values", key, i+1, item, k)
		}
		out[k] = v
	}
	return out, nil
}

// parseNodeTaints reads "k=v:Effect,k2:Effect" (value optional).
func parseNodeTaints(key, s string) ([]v1.Taint, error) {
	var out []v1.Taint
	for i, item := range splitList(s) {
		kv, effect, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("kube-env %s: item %d %q: want key[=value]:Effect", key, i+1, item)
		}
		k, v, _ := strings.Cut(kv, "=")
		if err := checkLabel(k, v); err != nil {
			return nil, fmt.Errorf("kube-env %s: item %d %q: %s", key, i+1, item, err)
		}
		switch e := v1.TaintEffect(effect); e {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
			out = append(out, v1.Taint{Key: k, Value: v, Effect: e})
		default:
			return nil, fmt.Errorf("kube-env %s: item %d %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", key, i+1, item, effect)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	return out, nil
}

// parseReserved reads kube_reserved: "cpu=1060m,memory=1019Mi,ephemeral-storage=41Gi".
func parseReserved(key, s string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for i, item := range splitList(s) {
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("kube-env %s: item %d %q: want resource=quantity", key, i+1, item)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("kube-env %s: item %d %q: %v", key, i+1, item, err)
		}
		out[v1.ResourceName(k)] = q
	}
	return out, nil
}

func checkLabel(k, v string) error {
	if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
		return fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
		return fmt.Errorf("value %q: %s", v, strings.Join(msgs, "; "))
	}
	return nil
}

// splitList splits on commas; an empty string is an empty list, an empty
// item is kept so that it is reported.
func splitList(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	items := strings.Split(s, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}
