package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// promQL checks queries with Prometheus's own parser, so that a rule with a
// query Prometheus would refuse is refused when the adapter starts rather
// than on the first metrics request.
type promQL struct {
	// functions is PromQL's function table with every function allowed:
	// whether an experimental function works is for the Prometheus the
	// adapter talks to to say (--enable-feature), not for the adapter.
	functions map[string]*parser.Function
}

func newPromQL() *promQL {
	fns := make(map[string]*parser.Function, len(parser.Functions))
	for name, f := range parser.Functions {
		c := *f
		c.Experimental = false
		fns[name] = &c
	}
	return &promQL{functions: fns}
}

// errExperimental marks a query that parses only with an experimental
// Prometheus feature enabled: accepted, with a warning.
var errExperimental = errors.New("experimental")

// checkSelector checks a seriesQuery: a series selector, as /api/v1/series
// takes in match[].
func (p *promQL) checkSelector(q string) error {
	if _, err := parser.ParseMetricSelector(q); err != nil {
		return fmt.Errorf("%q is not a PromQL series selector: %s", q, oneLine(err))
	}
	return nil
}

// checkExpr checks a rendered metricsQuery.
func (p *promQL) checkExpr(q string) error {
	pp := parser.NewParser(q, parser.WithFunctions(p.functions))
	defer pp.Close()
	expr, err := pp.ParseExpr()
	if err == nil {
		if fn := experimentalCall(expr); fn != "" {
			return fmt.Errorf("%w: function %q is experimental in Prometheus", errExperimental, fn)
		}
		return nil
	}
	msg := oneLine(err)
	if strings.Contains(msg, "experimental") || strings.Contains(msg, "not enabled") {
		return fmt.Errorf("%w: %s", errExperimental, msg)
	}
	return errors.New(msg)
}

// oneLine joins the parser's messages (it may report several) on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// experimentalCall names the first experimental function expr calls.
func experimentalCall(expr parser.Expr) string {
	var name string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if c, ok := n.(*parser.Call); ok && name == "" {
			if f := parser.Functions[c.Func.Name]; f != nil && f.Experimental {
				name = c.Func.Name
			}
		}
		return nil
	})
	return name
}
