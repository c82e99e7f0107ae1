package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuscale/gpuscale/pkg/inputlimit"
	"github.com/gpuscale/gpuscale/pkg/sim/serving"
)

// RequestFormat is how a request trace is written.
type RequestFormat string

// Request trace formats.
const (
	// RequestsCSV is a CSV file with a header row.
	RequestsCSV RequestFormat = "csv"
	// RequestsJSONL is one JSON object a line.
	RequestsJSONL RequestFormat = "jsonl"
)

// RequestColumns maps a request trace's columns (CSV) or fields (JSONL)
// onto requests.
type RequestColumns struct {
	Format RequestFormat
	// Time is the arrival: a number in TimeUnit or a date-time.
	Time string
	// TimeUnit is the unit of a numeric Time (0 means seconds).
	TimeUnit time.Duration
	// Input and Output are the prompt and generated token counts.
	Input, Output string
	// MaxRequests, when set, refuses a longer trace naming the row past it.
	MaxRequests int
}

// AzureLLMRequests reads the Azure LLM inference trace of 2023
// (TIMESTAMP,ContextTokens,GeneratedTokens; TIMESTAMP a date-time).
func AzureLLMRequests() RequestColumns {
	return RequestColumns{Format: RequestsCSV, Time: "TIMESTAMP", Input: "ContextTokens", Output: "GeneratedTokens"}
}

// MooncakeRequests reads the Mooncake FAST'25 traces (JSONL: timestamp in
// milliseconds, input_length, output_length).
func MooncakeRequests() RequestColumns {
	return RequestColumns{Format: RequestsJSONL, Time: "timestamp", TimeUnit: time.Millisecond, Input: "input_length", Output: "output_length"}
}

// MaxRequests bounds a request trace when its columns set no bound: ten
// million requests, far more than an hour of any public trace.
const MaxRequests = 10_000_000

// Requests reads a request trace through its column mapping. Times become
// seconds from the first request, which arrives at 0. Requests must come
// in time order: a log that goes back in time is damaged, and the row is
// refused naming the previous one. Every refusal names the file, the line
// and the column or field.
func Requests(name string, r io.Reader, c RequestColumns) ([]serving.Request, error) {
	if c.TimeUnit == 0 {
		c.TimeUnit = time.Second
	}
	if c.MaxRequests <= 0 {
		c.MaxRequests = MaxRequests
	}
	if c.Time == "" || c.Input == "" || c.Output == "" {
		return nil, fmt.Errorf("%s: request columns: time, input and output must all be named, got %q, %q and %q", name, c.Time, c.Input, c.Output)
	}
	var reqs []serving.Request
	var err error
	switch c.Format {
	case RequestsCSV:
		reqs, err = csvRequests(name, r, c)
	case RequestsJSONL:
		reqs, err = jsonlRequests(name, r, c)
	default:
		return nil, fmt.Errorf("%s: request format: must be %q or %q, got %q", name, RequestsCSV, RequestsJSONL, c.Format)
	}
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests", name)
	}
	first := reqs[0].At
	for i := range reqs {
		reqs[i].At -= first
	}
	return reqs, nil
}

func csvRequests(name string, r io.Reader, c RequestColumns) ([]serving.Request, error) {
	t, err := readTable(name, r)
	if err != nil {
		return nil, err
	}
	cols, err := t.need(c.Time, c.Input, c.Output)
	if err != nil {
		return nil, err
	}
	times := newTimeColumns(t, c.TimeUnit)
	reqs := make([]serving.Request, 0, len(t.rows))
	for i := range t.rows {
		if i >= c.MaxRequests {
			return nil, fmt.Errorf("%s:%d: more than %d requests", name, t.line(i), c.MaxRequests)
		}
		at, empty, err := times.seconds(i, cols[0])
		if err != nil {
			return nil, err
		}
		if empty {
			return nil, t.cellError(i, cols[0], "empty: every request needs its time")
		}
		if i > 0 && at < reqs[i-1].At {
			return nil, t.cellError(i, cols[0], "%s is before the previous request's %s (line %d): the trace must be in time order",
				t.str(i, cols[0]), t.str(i-1, cols[0]), t.line(i-1))
		}
		in, err := t.count(i, cols[1], "a token count", true, maxTraceTokens)
		if err != nil {
			return nil, err
		}
		out, err := t.count(i, cols[2], "a token count", true, maxTraceTokens)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, serving.Request{At: at, InputTokens: int64(in), OutputTokens: int64(out)})
	}
	return reqs, nil
}

func jsonlRequests(name string, r io.Reader, c RequestColumns) ([]serving.Request, error) {
	sc := bufio.NewScanner(inputlimit.Lines(name, r, inputlimit.TraceLineBytes))
	sc.Buffer(make([]byte, 64<<10), inputlimit.TraceLineBytes+1)
	var reqs []serving.Request
	prevLine := 0
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if len(reqs) >= c.MaxRequests {
			return nil, fmt.Errorf("%s:%d: more than %d requests", name, line, c.MaxRequests)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(text, &obj); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON object: %v", name, line, err)
		}
		at, err := jsonNumber(name, line, obj, c.Time, "a time", math.MaxFloat64, false)
		if err != nil {
			return nil, err
		}
		at *= c.TimeUnit.Seconds()
		if at > maxTraceSeconds {
			return nil, fmt.Errorf("%s:%d: field %s: a time must be at most 100 years, got %s", name, line, c.Time, obj[c.Time])
		}
		if n := len(reqs); n > 0 && at < reqs[n-1].At {
			return nil, fmt.Errorf("%s:%d: field %s: %s is before the previous request's (line %d): the trace must be in time order",
				name, line, c.Time, obj[c.Time], prevLine)
		}
		in, err := jsonNumber(name, line, obj, c.Input, "a token count", maxTraceTokens, true)
		if err != nil {
			return nil, err
		}
		out, err := jsonNumber(name, line, obj, c.Output, "a token count", maxTraceTokens, true)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, serving.Request{At: at, InputTokens: int64(in), OutputTokens: int64(out)})
		prevLine = line
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line longer than the %s limit for one line", name, inputlimit.Size(inputlimit.TraceLineBytes))
		}
		return nil, err
	}
	return reqs, nil
}

// jsonNumber reads field of obj: a number, not negative, at most limit,
// whole when whole is set.
func jsonNumber(name string, line int, obj map[string]json.RawMessage, field, what string, limit float64, whole bool) (float64, error) {
	raw, ok := obj[field]
	if !ok {
		fields := make([]string, 0, len(obj))
		for k := range obj {
			fields = append(fields, k)
		}
		return 0, fmt.Errorf("%s:%d: no field %s (fields: %s)", name, line, field, strings.Join(sortStrings(fields), ", "))
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s:%d: field %s: %s must be a number, got %s", name, line, field, what, raw)
	}
	switch {
	case v < 0:
		return 0, fmt.Errorf("%s:%d: field %s: %s must not be negative, got %s", name, line, field, what, raw)
	case v > limit:
		return 0, fmt.Errorf("%s:%d: field %s: %s must be at most %s, got %s", name, line, field, what, strconv.FormatFloat(limit, 'f', -1, 64), raw)
	case whole && v != math.Trunc(v):
		return 0, fmt.Errorf("%s:%d: field %s: %s must be a whole number, got %s", name, line, field, what, raw)
	}
	return v, nil
}

// ParseRequestColumns reads a request trace's form: a preset
// ("azure-llm", "mooncake") or "csv"/"jsonl" with a mapping
// "time=COL,input=COL,output=COL,time-unit=s|ms|us" (time-unit default s).
// A preset takes a mapping too, to rename its columns.
func ParseRequestColumns(format, mapping string) (RequestColumns, error) {
	var c RequestColumns
	switch format {
	case "azure-llm":
		c = AzureLLMRequests()
	case "mooncake":
		c = MooncakeRequests()
	case string(RequestsCSV), string(RequestsJSONL):
		c = RequestColumns{Format: RequestFormat(format)}
	default:
		return c, fmt.Errorf("request format: want azure-llm, mooncake, csv or jsonl, got %q", format)
	}
	for _, part := range strings.Split(mapping, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || v == "" {
			return c, fmt.Errorf("request columns: %q is not key=column", part)
		}
		switch k {
		case "time":
			c.Time = v
		case "input":
			c.Input = v
		case "output":
			c.Output = v
		case "time-unit":
			d, err := time.ParseDuration("1" + v)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("request columns: time-unit: want s, ms, us, m or h, got %q", v)
			}
			c.TimeUnit = d
		default:
			return c, fmt.Errorf("request columns: unknown key %q (keys: time, input, output, time-unit)", k)
		}
	}
	if c.Time == "" || c.Input == "" || c.Output == "" {
		return c, fmt.Errorf("request columns: a %s trace needs time=, input= and output= (got %q)", format, mapping)
	}
	return c, nil
}
