// Package promtest is a stand-in Prometheus for the metrics adapter's
// tests: it serves /api/v1/series and /api/v1/query from samples the test
// sets, filtering by the label matchers of the first series selector in the
// query and returning the samples unaggregated. That is enough to check
// which objects a query asks for and how the adapter treats what comes back.
package promtest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Sample is one series and its latest sample.
type Sample struct {
	// Labels include __name__.
	Labels map[string]string
	Value  float64
	At     time.Time
}

// Server is the stand-in Prometheus; its URL is the base address.
type Server struct {
	*httptest.Server
	mu      sync.Mutex
	samples []Sample
	queries []string
	series  int                  // /api/v1/series calls
	fail    func() (int, string) // when set, every call answers with this status and error type
	block   chan struct{}        // when set, calls wait for it (or the client going away)
	reply   []byte               // when set, every /api/v1/query answers with this body
}

// New starts a Server, closed when the test ends.
func New(t testing.TB) *Server {
	f := &Server{}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.mu.Lock()
		if f.block != nil {
			close(f.block)
			f.block = nil
		}
		f.mu.Unlock()
		f.Close()
	})
	return f
}

// Add adds samples.
func (f *Server) Add(s ...Sample) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.samples = append(f.samples, s...)
}

// LastQuery is the last expression /api/v1/query evaluated.
func (f *Server) LastQuery() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		return ""
	}
	return f.queries[len(f.queries)-1]
}

// Fail makes every later call answer with HTTP status code and a
// Prometheus error of type errorType.
func (f *Server) Fail(code int, errorType string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = func() (int, string) { return code, errorType }
}

// Block makes every later call wait until the test ends or the client
// gives up.
func (f *Server) Block() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.block == nil {
		f.block = make(chan struct{})
	}
}

// SetQueryReply makes every later /api/v1/query answer with body as it
// is, so that a benchmark measures its client rather than this server.
func (f *Server) SetQueryReply(body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reply = body
}

// SeriesCalls counts /api/v1/series calls.
func (f *Server) SeriesCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.series
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	block, fail, reply := f.block, f.fail, f.reply
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-r.Context().Done():
			return
		}
	}
	if fail != nil {
		code, typ := fail()
		writeJSON(w, code, map[string]any{"status": "error", "errorType": typ, "error": "injected failure"})
		return
	}
	switch r.URL.Path {
	case "/api/v1/series":
		f.mu.Lock()
		f.series++
		f.mu.Unlock()
		var data []map[string]string
		for _, s := range f.match(r.Form["match[]"][0]) {
			data = append(data, s.Labels)
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "success", "data": data})
	case "/api/v1/query":
		q := r.Form.Get("query")
		f.mu.Lock()
		f.queries = append(f.queries, q)
		f.mu.Unlock()
		if reply != nil {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(reply)
			return
		}
		result := []map[string]any{}
		for _, s := range f.match(q) {
			lbls := map[string]string{}
			for k, v := range s.Labels {
				if k != "__name__" {
					lbls[k] = v
				}
			}
			result = append(result, map[string]any{"metric": lbls, "value": []any{float64(s.At.UnixMilli()) / 1000, formatValue(s.Value)}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "success",
			"data": map[string]any{"resultType": "vector", "result": result}})
	default:
		http.NotFound(w, r)
	}
}

func formatValue(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

var (
	selectorRe = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)?\{([^}]*)\}`)
	matcherRe  = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")\s*$`)
)

// match returns the samples the first series selector in expr selects, in
// a stable order.
func (f *Server) match(expr string) []Sample {
	m := selectorRe.FindStringSubmatch(expr)
	if m == nil {
		panic(fmt.Sprintf("fake prometheus: no selector in %q", expr))
	}
	type matcher struct {
		label, op string
		value     string
		re        *regexp.Regexp
		set       map[string]bool // a =~ or !~ that is a plain alternation of literals
	}
	var ms []matcher
	if m[1] != "" {
		ms = append(ms, matcher{label: "__name__", op: "=", value: m[1]})
	}
	for _, part := range splitMatchers(m[2]) {
		mm := matcherRe.FindStringSubmatch(part)
		if mm == nil {
			panic(fmt.Sprintf("fake prometheus: bad matcher %q in %q", part, expr))
		}
		v, err := strconv.Unquote(mm[3])
		if err != nil {
			panic(err)
		}
		mt := matcher{label: mm[1], op: mm[2], value: v}
		if mt.op == "=~" || mt.op == "!~" {
			mt.re = regexp.MustCompile("^(?:" + v + ")$")
			mt.set = literalSet(v)
		}
		ms = append(ms, mt)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Sample
	for _, s := range f.samples {
		ok := true
		for _, mt := range ms {
			v := s.Labels[mt.label]
			switch mt.op {
			case "=":
				ok = ok && v == mt.value
			case "!=":
				ok = ok && v != mt.value
			case "=~":
				ok = ok && (mt.set != nil && mt.set[v] || mt.set == nil && mt.re.MatchString(v))
			case "!~":
				ok = ok && !(mt.set != nil && mt.set[v] || mt.set == nil && mt.re.MatchString(v))
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return fmt.Sprint(out[i].Labels) < fmt.Sprint(out[j].Labels) })
	return out
}

// literalSet returns the values of a pattern that is an alternation of
// quoted literals ("a|b\\.c"), as Prometheus's set matchers do, or nil.
func literalSet(pattern string) map[string]bool {
	set := map[string]bool{}
	for _, part := range strings.Split(pattern, "|") {
		lit := unescapeMeta.ReplaceAllString(part, "$1")
		if regexp.QuoteMeta(lit) != part {
			return nil
		}
		set[lit] = true
	}
	return set
}

var unescapeMeta = regexp.MustCompile(`\\(.)`)

// splitMatchers splits on commas outside quoted strings.
func splitMatchers(s string) []string {
	var parts []string
	var b strings.Builder
	inQuote, escaped := false, false
	for _, r := range s {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && inQuote:
			escaped = true
		case r == '"':
			inQuote = !inQuote
		case r == ',' && !inQuote:
			parts = append(parts, b.String())
			b.Reset()
			continue
		}
		b.WriteRune(r)
	}
	if strings.TrimSpace(b.String()) != "" {
		parts = append(parts, b.String())
	}
	return parts
}
