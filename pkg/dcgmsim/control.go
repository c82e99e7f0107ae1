package dcgmsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxControlBody bounds a PUT body; a load is a few dozen bytes.
const maxControlBody = 4 << 10

// loadRequest is the body of PUT /load/{namespace}/{pod}.
type loadRequest struct {
	Util *float64 `json:"util"`
	// Ramp is a Go duration ("30s"); empty means at once.
	Ramp string `json:"ramp,omitempty"`
}

// PodExists answers whether a pod is known, for the control endpoint to
// refuse loads for pods that do not exist.
type PodExists func(namespace, name string) bool

// ControlHandler serves the load control endpoint:
//
//	PUT /load/{namespace}/{pod}  body {"util": 100, "ramp": "30s"}
//	GET /load/{namespace}/{pod}
//	GET /load
//
// PUT answers 204; GETs answer PodLoad JSON. Errors are plain text naming
// the field and the value.
func ControlHandler(loads *LoadBook, exists PodExists) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /load/{namespace}/{pod}", func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("namespace"), r.PathValue("pod")
		l, err := decodeLoad(http.MaxBytesReader(w, r.Body, maxControlBody))
		if err != nil {
			http.Error(w, fmt.Sprintf("load for pod %s/%s: %v", ns, name, err), http.StatusBadRequest)
			return
		}
		if exists != nil && !exists(ns, name) {
			http.Error(w, fmt.Sprintf("pod %s/%s: not found", ns, name), http.StatusNotFound)
			return
		}
		loads.Set(ns+"/"+name, l)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /load/{namespace}/{pod}", func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("namespace"), r.PathValue("pod")
		pl, ok := loads.Get(ns + "/" + name)
		if !ok {
			if exists != nil && !exists(ns, name) {
				http.Error(w, fmt.Sprintf("pod %s/%s: not found", ns, name), http.StatusNotFound)
				return
			}
			pl = PodLoad{Namespace: ns, Pod: name, RampLeft: time.Duration(0).String()}
		}
		writeJSON(w, pl)
	})
	mux.HandleFunc("GET /load", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, loads.List())
	})
	return mux
}

func decodeLoad(body io.Reader) (Load, error) {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	var req loadRequest
	if err := dec.Decode(&req); err != nil {
		return Load{}, fmt.Errorf("body: %w", err)
	}
	if dec.More() {
		return Load{}, errors.New("body: more than one JSON value")
	}
	if req.Util == nil {
		return Load{}, errors.New(`util: required, e.g. {"util": 100, "ramp": "30s"}`)
	}
	l := Load{Util: *req.Util}
	if req.Ramp != "" {
		d, err := time.ParseDuration(req.Ramp)
		if err != nil {
			return Load{}, fmt.Errorf("ramp: not a duration, got %q", req.Ramp)
		}
		l.Ramp = d
	}
	return l, l.Validate()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
