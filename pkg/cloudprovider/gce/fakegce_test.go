package gce

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
)

// fakeGCE serves the parts of the Compute Engine JSON REST API the
// provider uses, with state a test sets up, and records every call.
type fakeGCE struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	migs      map[string]*fakeMIG // "project/zone/name"
	templates map[string]*compute.InstanceTemplate
	machines  map[string]*compute.MachineType // "project/zone/name"
	zones     []*compute.Zone
	calls     []fakeCall
	// fail holds, per call kind, status codes to answer before serving.
	fail map[string][]int
	// pageSize is the listing page size (pagination is always on).
	pageSize int
	// opRunning is how many zoneOperations.wait answers say RUNNING
	// before DONE; opError makes the operation end in that error code.
	opRunning int
	opError   string
	ops       map[string]int
	nextOp    int
	// holds are requests to be made to wait, by call kind; held are all
	// the holds made, for releaseAll.
	holds map[string]*fakeHold
	held  []*fakeHold
}

// fakeHold stops the next request of a kind before it is served.
type fakeHold struct {
	reached, release chan struct{}
	once             sync.Once
}

type fakeMIG struct {
	template  string
	target    int64
	instances []*compute.ManagedInstance
	project   string
	zone      string
	name      string
	created   int
	// resizeRequests are the group's queued requests, in insert order.
	resizeRequests []*compute.InstanceGroupManagerResizeRequest
}

// fakeCall is one request: method, path below /compute/v1/, the query
// without the client's alt and prettyPrint, and the body.
type fakeCall struct {
	Kind, Method, Path string
	Query              url.Values
	Body               string
}

func newFakeGCE(t *testing.T) *fakeGCE {
	f := &fakeGCE{t: t, migs: map[string]*fakeMIG{}, templates: map[string]*compute.InstanceTemplate{},
		machines: map[string]*compute.MachineType{}, fail: map[string][]int{}, pageSize: 2, ops: map[string]int{},
		holds: map[string]*fakeHold{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// service is the real client pointed at the fake.
func (f *fakeGCE) service() *compute.Service {
	svc, err := compute.NewService(context.Background(),
		option.WithEndpoint(f.srv.URL+"/compute/v1/"), option.WithoutAuthentication(), option.WithHTTPClient(f.srv.Client()))
	if err != nil {
		f.t.Fatal(err)
	}
	return svc
}

// addMIG adds a group with running instances name-0..name-(running-1).
func (f *fakeGCE) addMIG(project, zone, name, template string, running int) *fakeMIG {
	m := &fakeMIG{project: project, zone: zone, name: name, template: template}
	for i := 0; i < running; i++ {
		m.add("NONE", "RUNNING")
	}
	m.target = int64(running)
	f.migs[project+"/"+zone+"/"+name] = m
	return m
}

// add appends an instance with the given action and status.
func (m *fakeMIG) add(action, status string) *compute.ManagedInstance {
	name := fmt.Sprintf("%s-%d", m.name, m.created)
	m.created++
	mi := &compute.ManagedInstance{
		Name: name, CurrentAction: action, InstanceStatus: status,
		Instance: fmt.Sprintf("https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instances/%s", m.project, m.zone, name),
	}
	m.instances = append(m.instances, mi)
	return mi
}

// addTemplate stores a global template with a machine type and kube-env.
func (f *fakeGCE) addTemplate(project, name string, props *compute.InstanceProperties) string {
	path := "projects/" + project + "/global/instanceTemplates/" + name
	f.templates[path] = &compute.InstanceTemplate{Name: name, Properties: props}
	return "https://www.googleapis.com/compute/v1/" + path
}

func (f *fakeGCE) failNext(kind string, codes ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[kind] = append(f.fail[kind], codes...)
}

// callsOf returns the recorded calls of one kind; all calls for "".
func (f *fakeGCE) callsOf(kind string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if kind == "" || c.Kind == kind {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeGCE) resetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// hold makes the next request of a kind wait, outside the fake's lock so
// that other requests are served meanwhile, until release is called;
// reached is closed when the request arrives. Cleanup releases it.
func (f *fakeGCE) hold(kind string) (reached <-chan struct{}, release func()) {
	h := &fakeHold{reached: make(chan struct{}), release: make(chan struct{})}
	f.mu.Lock()
	f.holds[kind] = h
	f.held = append(f.held, h)
	f.mu.Unlock()
	f.t.Cleanup(f.releaseAll)
	return h.reached, h.open
}

func (h *fakeHold) open() { h.once.Do(func() { close(h.release) }) }

// releaseAll lets every held request go on.
func (f *fakeGCE) releaseAll() {
	f.mu.Lock()
	held := f.held
	f.mu.Unlock()
	for _, h := range held {
		h.open()
	}
}

func (f *fakeGCE) serve(w http.ResponseWriter, r *http.Request) {
	kind := routeKind(r.Method, strings.Split(strings.TrimPrefix(r.URL.Path, "/compute/v1/"), "/"))
	f.mu.Lock()
	if h := f.holds[kind]; h != nil {
		delete(f.holds, kind)
		f.mu.Unlock()
		close(h.reached)
		<-h.release
		f.mu.Lock()
	}
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/compute/v1/")
	q := r.URL.Query()
	q.Del("alt")
	q.Del("prettyPrint")
	parts := strings.Split(path, "/")
	f.calls = append(f.calls, fakeCall{Kind: kind, Method: r.Method, Path: path, Query: q, Body: string(body)})
	if codes := f.fail[kind]; len(codes) > 0 {
		f.fail[kind] = codes[1:]
		writeError(w, codes[0], "injected failure")
		return
	}
	switch kind {
	case "list":
		f.serveList(w, parts[1], parts[3], q.Get("pageToken"))
	case "listManagedInstances":
		m := f.mig(w, parts)
		if m == nil {
			return
		}
		from, to, next := f.page(len(m.instances), q.Get("pageToken"))
		writeJSON(w, &compute.InstanceGroupManagersListManagedInstancesResponse{ManagedInstances: m.instances[from:to], NextPageToken: next})
	case "resize":
		if m := f.mig(w, parts); m != nil {
			size, err := strconv.ParseInt(q.Get("size"), 10, 64)
			if err != nil || size < 0 {
				writeError(w, http.StatusBadRequest, "bad size "+q.Get("size"))
				return
			}
			m.resize(size)
			writeJSON(w, f.operation(parts[3]))
		}
	case "deleteInstances":
		if m := f.mig(w, parts); m != nil {
			var req compute.InstanceGroupManagersDeleteInstancesRequest
			if err := json.Unmarshal(body, &req); err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return
			}
			m.delete(req.Instances)
			writeJSON(w, f.operation(parts[3]))
		}
	case "insertResizeRequest":
		if m := f.mig(w, parts); m != nil {
			var rr compute.InstanceGroupManagerResizeRequest
			if err := json.Unmarshal(body, &rr); err != nil || rr.Name == "" || rr.ResizeBy <= 0 {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("bad resize request %s: %v", body, err))
				return
			}
			if m.resizeRequest(rr.Name) != nil {
				writeError(w, http.StatusConflict, "The resource '"+path+"/"+rr.Name+"' already exists")
				return
			}
			rr.State = "ACCEPTED"
			m.resizeRequests = append(m.resizeRequests, &rr)
			writeJSON(w, f.operation(parts[3]))
		}
	case "listResizeRequests":
		if m := f.mig(w, parts); m != nil {
			from, to, next := f.page(len(m.resizeRequests), q.Get("pageToken"))
			writeJSON(w, &compute.InstanceGroupManagerResizeRequestsListResponse{Items: m.resizeRequests[from:to], NextPageToken: next})
		}
	case "wait":
		f.serveWait(w, parts)
	case "instanceTemplates":
		if t := f.templates[path]; t != nil {
			writeJSON(w, t)
		} else {
			writeError(w, http.StatusNotFound, "The resource '"+path+"' was not found")
		}
	case "machineTypes":
		if mt := f.machines[parts[1]+"/"+parts[3]+"/"+parts[5]]; mt != nil {
			writeJSON(w, mt)
		} else {
			writeError(w, http.StatusNotFound, "The resource '"+path+"' was not found")
		}
	case "zones":
		writeJSON(w, &compute.ZoneList{Items: f.zones})
	default:
		writeError(w, http.StatusNotFound, "no route for "+r.Method+" "+path)
	}
}

// routeKind names a request by its last meaningful segment.
func routeKind(method string, p []string) string {
	n := len(p)
	switch {
	case method == http.MethodGet && n == 4 && p[2] == "zones" && p[3] == "":
		return "zones"
	case method == http.MethodGet && n == 3 && p[2] == "zones":
		return "zones"
	case method == http.MethodGet && n == 5 && p[4] == "instanceGroupManagers":
		return "list"
	case n == 7 && p[4] == "instanceGroupManagers" && p[6] == "resizeRequests":
		if method == http.MethodPost {
			return "insertResizeRequest"
		}
		return "listResizeRequests"
	case method == http.MethodPost && n == 7 && p[4] == "instanceGroupManagers":
		return p[6]
	case method == http.MethodPost && n == 7 && p[4] == "operations" && p[6] == "wait":
		return "wait"
	case method == http.MethodGet && (n == 5 && p[3] == "instanceTemplates" || n == 6 && p[4] == "instanceTemplates"):
		return "instanceTemplates"
	case method == http.MethodGet && n == 6 && p[4] == "machineTypes":
		return "machineTypes"
	}
	return "unknown"
}

func (f *fakeGCE) serveList(w http.ResponseWriter, project, zone, token string) {
	var items []*compute.InstanceGroupManager
	keys := make([]string, 0, len(f.migs))
	for k := range f.migs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m := f.migs[k]
		if m.project == project && m.zone == zone {
			items = append(items, &compute.InstanceGroupManager{Name: m.name, Zone: zone, TargetSize: m.target, InstanceTemplate: m.template})
		}
	}
	from, to, next := f.page(len(items), token)
	writeJSON(w, &compute.InstanceGroupManagerList{Items: items[from:to], NextPageToken: next})
}

func (f *fakeGCE) page(n int, token string) (from, to int, next string) {
	if token != "" {
		var err error
		if from, err = strconv.Atoi(token); err != nil || from > n {
			f.t.Errorf("bad page token %q", token)
			return 0, 0, ""
		}
	}
	to = min(from+f.pageSize, n)
	if to < n {
		next = strconv.Itoa(to)
	}
	return from, to, next
}

func (f *fakeGCE) mig(w http.ResponseWriter, p []string) *fakeMIG {
	m := f.migs[p[1]+"/"+p[3]+"/"+p[5]]
	if m == nil {
		writeError(w, http.StatusNotFound, "The resource 'projects/"+p[1]+"/zones/"+p[3]+"/instanceGroupManagers/"+p[5]+"' was not found")
	}
	return m
}

// resize grows with CREATING instances and shrinks by dropping those
// first, as a MIG does.
func (m *fakeMIG) resize(size int64) {
	for int64(len(m.instances)) < size {
		m.add("CREATING", "")
	}
	for int64(len(m.instances)) > size {
		drop := len(m.instances) - 1
		for i := len(m.instances) - 1; i >= 0; i-- {
			if m.instances[i].CurrentAction == "CREATING" {
				drop = i
				break
			}
		}
		m.instances = append(m.instances[:drop], m.instances[drop+1:]...)
	}
	m.target = size
}

// resizeRequest is the group's resize request of that name, nil if none.
func (m *fakeMIG) resizeRequest(name string) *compute.InstanceGroupManagerResizeRequest {
	for _, rr := range m.resizeRequests {
		if rr.Name == name {
			return rr
		}
	}
	return nil
}

// grant fills a resize request as Compute Engine does when it has the
// capacity: all its instances at once, the target raised by as many.
func (m *fakeMIG) grant(name string) {
	rr := m.resizeRequest(name)
	rr.State = "SUCCEEDED"
	m.resize(m.target + rr.ResizeBy)
}

func (m *fakeMIG) delete(paths []string) {
	for _, p := range paths {
		for _, mi := range m.instances {
			if strings.HasSuffix(mi.Instance, "/"+p) && mi.CurrentAction != "DELETING" {
				mi.CurrentAction = "DELETING"
				m.target--
			}
		}
	}
}

func (f *fakeGCE) operation(zone string) *compute.Operation {
	f.nextOp++
	name := fmt.Sprintf("operation-%d", f.nextOp)
	f.ops[name] = f.opRunning
	return &compute.Operation{Name: name, Zone: zone, Status: "RUNNING"}
}

func (f *fakeGCE) serveWait(w http.ResponseWriter, p []string) {
	name := p[5]
	left, ok := f.ops[name]
	if !ok {
		writeError(w, http.StatusNotFound, "no operation "+name)
		return
	}
	op := &compute.Operation{Name: name, Zone: p[3], Status: "DONE"}
	if left > 0 {
		f.ops[name] = left - 1
		op.Status = "RUNNING"
	} else if f.opError != "" {
		op.Error = &compute.OperationError{Errors: []*compute.OperationErrorErrors{{Code: f.opError, Message: "injected"}}}
	}
	writeJSON(w, op)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in the API's error shape, which googleapi parses.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg, "errors": []map[string]string{{"message": msg, "reason": http.StatusText(code)}},
	}})
}
