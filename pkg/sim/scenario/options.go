package scenario

import (
	"fmt"
	"strconv"

	"github.com/gpuscale/gpuscale/pkg/autoscalerflags"
)

// Settings are node autoscaler flags under their upstream names, as a
// scenario's autoscaler section gives them: scan-interval: 30s,
// expander: price. Every decision flag of `gpuscale cluster-autoscaler`
// is accepted, with the same validation; a list repeats a flag.
type Settings map[string]any

// List returns the settings in name order, values as a command line
// would give them.
func (s Settings) List() ([]autoscalerflags.Setting, error) {
	m := make(map[string]any, len(s))
	for k, v := range s {
		if f, ok := v.(float64); ok {
			v = strconv.FormatFloat(f, 'f', -1, 64)
		}
		m[k] = v
	}
	return autoscalerflags.SettingsOf(m)
}

// Decision returns the decision options for the scenario: the upstream
// defaults, the scenario's seed feeding the expanders, its autoscaler
// settings, then each of more (--set, a --compare option set) in order.
func (s *Scenario) Decision(more ...[]autoscalerflags.Setting) (autoscalerflags.Decision, error) {
	own, err := s.Autoscaler.List()
	if err != nil {
		return autoscalerflags.Decision{}, fmt.Errorf("autoscaler: %w", err)
	}
	groups := append([][]autoscalerflags.Setting{{{Name: "seed", Value: strconv.FormatInt(s.Seed, 10)}}, own}, more...)
	d, err := autoscalerflags.Parse(groups...)
	if err != nil {
		return d, fmt.Errorf("autoscaler: %w", err)
	}
	return d, nil
}
