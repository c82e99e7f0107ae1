package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/limits"
)

// flagErrors collects messages of the form "--flag: rule, got value".
type flagErrors struct{ errs []error }

func (v *flagErrors) add(flag, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
}

func (v *flagErrors) positive(flag string, d time.Duration) {
	if d <= 0 {
		v.add(flag, "must be positive, got %s", d)
	}
}

func (v *flagErrors) notNegative(flag string, d time.Duration) {
	if d < 0 {
		v.add(flag, "must not be negative, got %s", d)
	}
}

func (v *flagErrors) notNegativeInt(flag string, n int) {
	if n < 0 {
		v.add(flag, "must not be negative, got %d", n)
	}
}

// fraction accepts (0, 1]: a threshold of 0 would make no node a candidate,
// which --scale-down-enabled=false says more plainly.
func (v *flagErrors) fraction(flag string, f float64) {
	if !(f > 0 && f <= 1) { // also catches NaN
		v.add(flag, "must be in (0, 1], got %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
}

func (v *flagErrors) dnsLabel(flag, s string) {
	if msgs := validation.IsDNS1123Label(s); len(msgs) > 0 {
		v.add(flag, "not a namespace name (%s), got %q", strings.Join(msgs, ", "), s)
	}
}

func (v *flagErrors) dnsSubdomain(flag, s string) {
	if msgs := validation.IsDNS1123Subdomain(s); len(msgs) > 0 {
		v.add(flag, "not an object name (%s), got %q", strings.Join(msgs, ", "), s)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinNames(names []string) string { return strings.Join(names, ", ") }

// rangeString writes a limits.Range as its flag takes it.
func rangeString(r limits.Range) string { return fmt.Sprintf("%d:%d", r.Min, r.Max) }

// nonEmpty keeps an empty repeated flag nil, as the core's defaults are.
func nonEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}
