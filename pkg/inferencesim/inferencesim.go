// Package inferencesim stands in for LLM inference servers on clusters
// without GPUs (kwok nodes, tests, demos), as dcgmsim stands in for
// dcgm-exporter: it serves vLLM's metric names for the Ready pods of each
// model, driven by a request load set per model, so that HPAs on queue
// depth and KV-cache use, and the metrics adapter's vLLM rules, run as
// written.
//
// A pod serves the model named by its label (ModelLabel). The requests of a
// model are spread over its Ready pods: each runs up to SlotsPerPod of them
// (vLLM's max_num_seqs) and the rest wait, spread likewise. While the model
// has no Ready pod its requests wait in front of it, at the router: that
// queue is a series without a pod label, so a per-model sum sees the same
// requests whether servers run or not, and an HPA can scale the model from
// zero on it.
//
// Each server also serves vLLM's time-to-first-token histogram: requests
// begin as slots free up, and each waits for its first token the prefill
// time after the requests queued on that server ahead of it (ttft.go).
package inferencesim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DefaultModelLabel is the pod label that names the model a pod serves.
const DefaultModelLabel = "inference.gpuscale.dev/model"

// DefaultSlotsPerPod is how many requests one server runs at once.
const DefaultSlotsPerPod = 8

// DefaultPrefillDuration and DefaultRequestDuration are the time to the
// first token of a request that does not queue, and how long a request
// holds its slot: the order of a short chat turn on an 8B model.
const (
	DefaultPrefillDuration = 100 * time.Millisecond
	DefaultRequestDuration = 10 * time.Second
)

// Options configure New.
type Options struct {
	// Client lists the pods. Required.
	Client kubernetes.Interface
	// ModelLabel names the pod label holding the model (default DefaultModelLabel).
	ModelLabel string
	// SlotsPerPod is the number of requests a pod runs at once (default DefaultSlotsPerPod).
	SlotsPerPod int
	// PrefillDuration is a request's time to first token when it does not
	// queue (default DefaultPrefillDuration).
	PrefillDuration time.Duration
	// RequestDuration is how long a request holds its slot, prefill and
	// decode (default DefaultRequestDuration); with SlotsPerPod it sets a
	// server's throughput, and so how long its queue takes to drain.
	RequestDuration time.Duration
	// Now is the clock the histograms advance on (default time.Now).
	Now func() time.Time
}

// Model names one model in one namespace.
type Model struct{ Namespace, Name string }

// Simulator serves the metrics of every model with a load or a pod.
type Simulator struct {
	opts  Options
	mu    sync.Mutex
	loads map[Model]int
	// ttfts are the servers' histograms, by namespace/pod.
	ttfts map[string]*ttftHistogram
}

// New checks o and builds a Simulator.
func New(o Options) (*Simulator, error) {
	if o.Client == nil {
		return nil, errors.New("client: required")
	}
	if o.ModelLabel == "" {
		o.ModelLabel = DefaultModelLabel
	}
	if o.SlotsPerPod == 0 {
		o.SlotsPerPod = DefaultSlotsPerPod
	}
	if o.SlotsPerPod < 0 {
		return nil, fmt.Errorf("slots per pod: must be positive, got %d", o.SlotsPerPod)
	}
	if o.PrefillDuration == 0 {
		o.PrefillDuration = DefaultPrefillDuration
	}
	if o.RequestDuration == 0 {
		o.RequestDuration = DefaultRequestDuration
	}
	if o.PrefillDuration < 0 {
		return nil, fmt.Errorf("prefill duration: must be positive, got %s", o.PrefillDuration)
	}
	if o.RequestDuration < 0 {
		return nil, fmt.Errorf("request duration: must be positive, got %s", o.RequestDuration)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Simulator{opts: o, loads: map[Model]int{}, ttfts: map[string]*ttftHistogram{}}, nil
}

// SetLoad sets the requests in the system for a model (running and
// waiting together).
func (s *Simulator) SetLoad(m Model, requests int) error {
	if requests < 0 {
		return fmt.Errorf("requests for model %s/%s: must not be negative, got %d", m.Namespace, m.Name, requests)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads[m] = requests
	return nil
}

// podState is what one server reports.
type podState struct {
	pod              string
	running, waiting int
}

// modelState is one model's servers and its queue at the router.
type modelState struct {
	model  Model
	pods   []podState
	router int
}

// snapshot spreads each model's load over its Ready pods, in a stable
// order: models by namespace and name, pods by name.
func (s *Simulator) snapshot(ctx context.Context) ([]modelState, error) {
	list, err := s.opts.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: s.opts.ModelLabel})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	ready := map[Model][]string{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !isReady(p) {
			continue
		}
		m := Model{p.Namespace, p.Labels[s.opts.ModelLabel]}
		ready[m] = append(ready[m], p.Name)
	}
	s.mu.Lock()
	models := map[Model]int{}
	for m, n := range s.loads {
		models[m] = n
	}
	s.mu.Unlock()
	for m := range ready {
		if _, ok := models[m]; !ok {
			models[m] = 0
		}
	}
	out := make([]modelState, 0, len(models))
	for m, requests := range models {
		out = append(out, s.spread(m, requests, ready[m]))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].model, out[j].model
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	return out, nil
}

// spread gives each pod up to SlotsPerPod running requests and an equal
// share of the rest (the first pods one more when it does not divide).
func (s *Simulator) spread(m Model, requests int, pods []string) modelState {
	st := modelState{model: m}
	if len(pods) == 0 {
		st.router = requests
		return st
	}
	sort.Strings(pods)
	n := len(pods)
	running := min(requests, n*s.opts.SlotsPerPod)
	waiting := requests - running
	for i, p := range pods {
		st.pods = append(st.pods, podState{pod: p, running: share(running, n, i), waiting: share(waiting, n, i)})
	}
	return st
}

func share(total, n, i int) int {
	v := total / n
	if i < total%n {
		v++
	}
	return v
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// write renders the models in the Prometheus text format, with vLLM's
// names; every series carries namespace and model_name, a server's also
// pod (scrape with honor_labels, as a federation endpoint).
func (s *Simulator) write(w io.Writer, models []modelState, hists map[string]*ttftHistogram) error {
	var b strings.Builder
	gauge := func(name, help string, value func(ps podState) float64, router bool) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
		for _, m := range models {
			for _, ps := range m.pods {
				fmt.Fprintf(&b, "%s{model_name=%q,namespace=%q,pod=%q} %g\n", name, m.model.Name, m.model.Namespace, ps.pod, value(ps))
			}
			if router {
				fmt.Fprintf(&b, "%s{model_name=%q,namespace=%q} %d\n", name, m.model.Name, m.model.Namespace, m.router)
			}
		}
	}
	slots := float64(s.opts.SlotsPerPod)
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", func(ps podState) float64 { return float64(ps.running) }, false)
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed (at the router while the model has no server).",
		func(ps podState) float64 { return float64(ps.waiting) }, true)
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func(ps podState) float64 { return float64(ps.running) / slots }, false)
	writeTTFT(&b, models, hists)
	_, err := io.WriteString(w, b.String())
	return err
}

// Handler serves /metrics.
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		models, err := s.snapshot(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_ = s.write(w, models, s.observe(models))
	})
	return mux
}

// maxControlBody bounds a PUT body; a load is a few bytes.
const maxControlBody = 4 << 10

// ControlHandler sets and reads loads over HTTP:
//
//	PUT /load/{namespace}/{model}  body {"requests": 12}
//	GET /load/{namespace}/{model}
//
// PUT answers 204, GET {"requests": N}. Errors are plain text naming the
// field and the value.
func (s *Simulator) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /load/{namespace}/{model}", func(w http.ResponseWriter, r *http.Request) {
		m := Model{r.PathValue("namespace"), r.PathValue("model")}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody))
		dec.DisallowUnknownFields()
		var body struct {
			Requests *int `json:"requests"`
		}
		if err := dec.Decode(&body); err != nil {
			http.Error(w, fmt.Sprintf("load for model %s/%s: body: %v", m.Namespace, m.Name, err), http.StatusBadRequest)
			return
		}
		if body.Requests == nil {
			http.Error(w, fmt.Sprintf(`load for model %s/%s: requests: required, e.g. {"requests": 12}`, m.Namespace, m.Name), http.StatusBadRequest)
			return
		}
		if err := s.SetLoad(m, *body.Requests); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /load/{namespace}/{model}", func(w http.ResponseWriter, r *http.Request) {
		m := Model{r.PathValue("namespace"), r.PathValue("model")}
		s.mu.Lock()
		n := s.loads[m]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"requests": n})
	})
	return mux
}
