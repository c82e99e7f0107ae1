package prom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/common/model"
)

// Sample is one element of an instant vector.
type Sample struct {
	// Labels are the sample's labels in the order Prometheus sent them.
	Labels []Label
	// Value is the sample's value; NaN and infinities are kept.
	Value float64
	// Timestamp is the sample's own time.
	Timestamp model.Time
}

// Label is one label of a sample.
type Label struct {
	Name, Value string
}

// Label returns the value of the label name and whether the sample has it.
func (s *Sample) Label(name string) (string, bool) {
	for _, l := range s.Labels {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}

// errNotVector is wrapped in the error for a matrix or string result: the
// query needs fixing, the reply is not broken.
var errNotVector = errors.New("want an instant vector or a scalar")

// errNotFloat is wrapped in the error for a native histogram sample, which
// has no single value; like errNotVector it is the query's to fix.
var errNotFloat = errors.New("want float samples; reduce histograms with histogram_quantile, histogram_avg or histogram_count")

// apiFailure is a reply whose status is "error".
type apiFailure struct {
	errorType, msg string
}

func (e *apiFailure) Error() string { return e.errorType + ": " + e.msg }

// decoder reads a /api/v1/query reply in one pass over the body. Label
// names and values are gathered in one buffer that becomes a single
// string, so a reply of any size costs a handful of allocations. It checks
// the JSON as strictly as encoding/json, and refuses shapes Prometheus
// never sends (duplicate keys, null, pairs of other than two elements,
// native histograms) rather than guessing what they mean.
type decoder struct {
	b     []byte
	i     int
	arena []byte     // label names and values, unescaped
	refs  []labelRef // one per label, offsets into arena
	out   []sampleRef
}

// decoders keeps decoders' buffers between replies.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

type span struct{ from, to int }

type labelRef struct{ name, value span }

type sampleRef struct {
	labels    span // into refs
	value     float64
	timestamp model.Time
}

// decodeQuery decodes a 2xx /api/v1/query body. A body whose status is
// "error" gives an *apiFailure.
func decodeQuery(body []byte) ([]Sample, error) {
	d := decoders.Get().(*decoder)
	*d = decoder{b: body, arena: d.arena[:0], refs: d.refs[:0], out: d.out[:0]}
	defer func() {
		d.b = nil
		if cap(d.arena) <= maxPooledBody {
			decoders.Put(d)
		}
	}()
	var status, errorType, errMsg string
	var data span // where data is, when it comes before status
	var seen [4]bool
	err := d.object(func(key []byte) error {
		var err error
		switch k := string(key); k {
		case "status":
			err = d.once(&seen[0], k)
			status, err = d.stringAfter(err)
		case "errorType":
			err = d.once(&seen[1], k)
			errorType, err = d.stringAfter(err)
		case "error":
			err = d.once(&seen[2], k)
			errMsg, err = d.stringAfter(err)
		case "data":
			if err = d.once(&seen[3], k); err != nil {
				return err
			}
			if seen[0] && status != "error" {
				return d.data() // Prometheus's order: read in place
			}
			data, err = d.skip(false)
		default:
			_, err = d.skip(true)
		}
		return err
	}, "status", "errorType", "error", "data")
	if err == nil {
		err = d.end()
	}
	if err != nil {
		return nil, err
	}
	if status == "error" {
		return nil, &apiFailure{errorType: errorType, msg: errMsg}
	}
	if !seen[3] {
		return nil, errors.New(`reply has no "data"`)
	}
	if data.to > 0 {
		if err := d.at(data, d.data); err != nil {
			return nil, err
		}
	}
	return d.samples(), nil
}

// data decodes the data object.
func (d *decoder) data() error {
	var resultType string
	var result span // where result is, when it comes before resultType
	var seen [2]bool
	err := d.object(func(key []byte) error {
		var err error
		switch k := string(key); k {
		case "resultType":
			err = d.once(&seen[0], k)
			resultType, err = d.stringAfter(err)
		case "result":
			if err = d.once(&seen[1], k); err != nil {
				return err
			}
			if seen[0] {
				return d.result(resultType) // Prometheus's order: read in place
			}
			result, err = d.skip(false)
		default:
			_, err = d.skip(true)
		}
		return err
	}, "resultType", "result")
	if err != nil {
		return err
	}
	if !seen[0] || !seen[1] {
		return errors.New(`data needs "resultType" and "result"`)
	}
	if result.to > 0 {
		return d.at(result, func() error { return d.result(resultType) })
	}
	return nil
}

// result decodes the result of type resultType.
func (d *decoder) result(resultType string) error {
	switch resultType {
	case "vector":
		more, err := d.open('[', ']')
		for err == nil && more {
			if err = d.sample(); err == nil {
				more, err = d.more(']')
			}
		}
		return err
	case "scalar":
		var s sampleRef
		var err error
		s.value, s.timestamp, err = d.pair()
		d.out = append(d.out, s)
		return err
	case "matrix", "string":
		return fmt.Errorf("query returned a %s, %w", resultType, errNotVector)
	default:
		return fmt.Errorf("unknown result type %q", resultType)
	}
}

// at reads the value found earlier at s with read, then goes back to
// where the reader was.
func (d *decoder) at(s span, read func() error) error {
	back := d.i
	d.i = s.from
	err := read()
	if err == nil && d.i != s.to {
		err = fmt.Errorf("invalid JSON value at offset %d", s.from)
	}
	d.i = back
	return err
}

// sample decodes {"metric":{...},"value":[t,"v"]}. The hot paths
// (sample, labels, pair) loop rather than take callbacks: a closure per
// sample would be an allocation per sample.
func (d *decoder) sample() error {
	s := sampleRef{labels: span{len(d.refs), len(d.refs)}}
	var hasMetric, hasValue bool
	more, err := d.open('{', '}')
	for err == nil && more {
		var key []byte
		if key, err = d.key("metric", "value", "histogram"); err != nil {
			break
		}
		switch string(key) {
		case "metric":
			if err = d.once(&hasMetric, "metric"); err == nil {
				s.labels.from = len(d.refs)
				err = d.labels()
				s.labels.to = len(d.refs)
			}
		case "value":
			if err = d.once(&hasValue, "value"); err == nil {
				s.value, s.timestamp, err = d.pair()
			}
		case "histogram":
			err = fmt.Errorf("query returned a native histogram sample, %w", errNotFloat)
		default:
			_, err = d.skip(true)
		}
		if err == nil {
			more, err = d.more('}')
		}
	}
	if err != nil {
		return err
	}
	if !hasValue {
		return errors.New(`sample has no "value"`)
	}
	d.out = append(d.out, s)
	return nil
}

// labels decodes the metric object, a map of label names to values.
func (d *decoder) labels() error {
	first := len(d.refs)
	more, err := d.open('{', '}')
	for err == nil && more {
		var name, value []byte
		if name, err = d.key(); err != nil {
			break
		}
		if value, err = d.stringValue(); err != nil {
			break
		}
		for _, r := range d.refs[first:] {
			if bytes.Equal(d.arena[r.name.from:r.name.to], name) {
				return fmt.Errorf("duplicate label %q", name)
			}
		}
		d.refs = append(d.refs, labelRef{name: d.keep(name), value: d.keep(value)})
		more, err = d.more('}')
	}
	return err
}

// pair decodes [timestamp, "value"] with model.Time's and
// model.SampleValue's own parsing.
func (d *decoder) pair() (float64, model.Time, error) {
	var ts model.Time
	var v model.SampleValue
	if err := d.expect('['); err != nil {
		return 0, 0, err
	}
	num, err := d.number()
	if err != nil {
		return 0, 0, err
	}
	if err := ts.UnmarshalJSON(num); err != nil {
		return 0, 0, err
	}
	if d.peek() != ',' {
		return 0, 0, d.syntax("a sample pair of two elements")
	}
	d.i++
	lit, escaped, err := d.stringLiteral()
	if err != nil {
		return 0, 0, err
	}
	if escaped && !json.Valid(lit) {
		return 0, 0, fmt.Errorf("invalid string %s", lit)
	}
	if err := v.UnmarshalJSON(lit); err != nil {
		return 0, 0, err
	}
	if err := d.expect(']'); err != nil {
		return 0, 0, fmt.Errorf("a sample pair of two elements: %w", err)
	}
	return float64(v), ts, nil
}

// samples turns the gathered references into Samples; all label strings
// share one allocation.
func (d *decoder) samples() []Sample {
	all := string(d.arena)
	labels := make([]Label, len(d.refs))
	for i, r := range d.refs {
		labels[i] = Label{Name: all[r.name.from:r.name.to], Value: all[r.value.from:r.value.to]}
	}
	out := make([]Sample, len(d.out))
	for i, s := range d.out {
		out[i] = Sample{Value: s.value, Timestamp: s.timestamp}
		if s.labels.to > s.labels.from {
			out[i].Labels = labels[s.labels.from:s.labels.to:s.labels.to]
		}
	}
	return out
}

// keep appends b to the arena and returns where it is.
func (d *decoder) keep(b []byte) span {
	from := len(d.arena)
	d.arena = append(d.arena, b...)
	return span{from, len(d.arena)}
}

func (d *decoder) once(seen *bool, key string) error {
	if *seen {
		return fmt.Errorf("duplicate key %q", key)
	}
	*seen = true
	return nil
}
