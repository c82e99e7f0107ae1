package provider

import (
	"fmt"
	"math"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuscale/gpuscale/pkg/metricsadapter/prom"
)

// apiError turns a failure into the API error the client sees: Prometheus
// timeouts are 504, Prometheus being down is 503, a query Prometheus
// refuses and data the adapter refuses are 500 with the rule named.
func apiError(err error, what, query string) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	msg := what + ": " + err.Error()
	if query != "" {
		msg += " (query: " + query + ")"
	}
	switch prom.KindOf(err) {
	case prom.KindTimeout, prom.KindCanceled:
		return apierrors.NewTimeoutError(msg, 1)
	case prom.KindUnavailable:
		return apierrors.NewServiceUnavailable(msg)
	default:
		return apierrors.NewInternalError(fmt.Errorf("%s", msg))
	}
}

// quantity converts a sample value exactly where it can: whole numbers as
// integers ("100"), others in the finest suffix Quantity has. NaN and
// infinities have no Quantity and are refused rather than turned into 0.
func quantity(v float64) (resource.Quantity, error) {
	switch {
	case math.IsNaN(v):
		return resource.Quantity{}, fmt.Errorf("value is NaN")
	case math.IsInf(v, 0):
		return resource.Quantity{}, fmt.Errorf("value is %v", v)
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return *resource.NewQuantity(int64(v), resource.DecimalSI), nil
	}
	q, err := resource.ParseQuantity(strconv.FormatFloat(v, 'f', -1, 64))
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("value %v cannot be expressed as a quantity: %w", v, err)
	}
	return q, nil
}
