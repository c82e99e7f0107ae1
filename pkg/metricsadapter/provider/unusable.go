package provider

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Why an object's samples cannot be served.
const (
	// reasonAmbiguous: the query returned several samples for the object,
	// and picking one would be a guess.
	reasonAmbiguous = "ambiguous"
	// reasonNotANumber: the value is NaN or infinite; a Quantity cannot
	// hold it, and turning it into 0 would be a lie.
	reasonNotANumber = "not_a_number"
)

// unusableObject is one object left out of an answer.
type unusableObject struct {
	name   string
	reason string
	why    string
}

// unusableObjects are the objects of one query that cannot be served,
// sorted by name, with the query that gave them.
type unusableObjects struct {
	list  []unusableObject
	query string
}

func (u *unusableObjects) add(o unusableObject) { u.list = append(u.list, o) }

// describe lists the objects and why, for a log line or an error.
func (u unusableObjects) describe() string {
	parts := make([]string, len(u.list))
	for i, o := range u.list {
		parts[i] = o.name + ": " + o.why
	}
	return strings.Join(parts, "; ")
}

// err is the error a request gets when the object it asks for, or every
// object it lists, is unusable. The HPA shows it in its conditions, and
// `gpuscale explain hpa` asks for each pod left out of a list and shows it.
func (u unusableObjects) err(e customEntry, metric string) error {
	return apierrors.NewInternalError(fmt.Errorf("%s: metric %s: no usable value for %s (query: %s)",
		e.rule.ID, metric, u.describe(), u.query))
}

// reportUnusable logs the objects left out of an answer and counts them.
func (p *Provider) reportUnusable(method string, e customEntry, metric string, u unusableObjects) {
	p.opts.Logger.Info("objects left out of a metrics answer: no usable value", "rule", e.rule.ID, "metric", metric,
		"method", method, "objects", u.describe(), "query", u.query)
	for _, o := range u.list {
		p.opts.Metrics.unusable(e.rule.ID, metric, o.reason)
	}
}
