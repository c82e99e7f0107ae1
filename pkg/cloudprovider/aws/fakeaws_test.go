package aws

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// The fake serves the Auto Scaling (awsquery) and EC2 (ec2query) wire
// protocols on one loopback server: form-encoded POSTs with Action and
// Version, XML answers, NextToken pages, each protocol's error document.
// Every request must carry a SigV4 signature that verifies with the test
// credentials.
const (
	testRegion    = "us-east-1"
	testAccessKey = "AKIDGPUSCALETEST"
	testSecretKey = "gpuscale-test-secret"
	asNamespace   = "http://autoscaling.amazonaws.com/doc/2011-01-01/"
	ec2Namespace  = "http://ec2.amazonaws.com/doc/2016-11-15/"
)

// fakeASG is an Auto Scaling group in the shape DescribeAutoScalingGroups
// returns it.
type fakeASG struct {
	Name                    string         `xml:"AutoScalingGroupName"`
	MinSize                 int            `xml:"MinSize"`
	MaxSize                 int            `xml:"MaxSize"`
	DesiredCapacity         int            `xml:"DesiredCapacity"`
	AvailabilityZones       []string       `xml:"AvailabilityZones>member"`
	Instances               []fakeInstance `xml:"Instances>member"`
	LaunchConfigurationName string         `xml:"LaunchConfigurationName,omitempty"`
	LaunchTemplate          *fakeLTSpec    `xml:"LaunchTemplate,omitempty"`
	MixedInstancesPolicy    *fakeMIP       `xml:"MixedInstancesPolicy,omitempty"`
	Tags                    []fakeTag      `xml:"Tags>member"`
}

type fakeInstance struct {
	InstanceId       string `xml:"InstanceId"`
	AvailabilityZone string `xml:"AvailabilityZone"`
	LifecycleState   string `xml:"LifecycleState"`
	HealthStatus     string `xml:"HealthStatus"`
}

type fakeLTSpec struct {
	LaunchTemplateId   string `xml:"LaunchTemplateId,omitempty"`
	LaunchTemplateName string `xml:"LaunchTemplateName,omitempty"`
	Version            string `xml:"Version,omitempty"`
}

type fakeMIP struct {
	LaunchTemplate struct {
		LaunchTemplateSpecification fakeLTSpec `xml:"LaunchTemplateSpecification"`
		Overrides                   []struct {
			InstanceType string `xml:"InstanceType,omitempty"`
		} `xml:"Overrides>member"`
	} `xml:"LaunchTemplate"`
	InstancesDistribution *struct {
		OnDemandBaseCapacity                int `xml:"OnDemandBaseCapacity"`
		OnDemandPercentageAboveBaseCapacity int `xml:"OnDemandPercentageAboveBaseCapacity"`
	} `xml:"InstancesDistribution,omitempty"`
}

type fakeTag struct {
	Key               string `xml:"Key"`
	Value             string `xml:"Value"`
	ResourceId        string `xml:"ResourceId"`
	ResourceType      string `xml:"ResourceType"`
	PropagateAtLaunch bool   `xml:"PropagateAtLaunch"`
}

// fakeLT is one launch template version; an empty InstanceType is a
// template without one.
type fakeLT struct {
	ID, Name     string
	Version      int
	Default      bool
	InstanceType string
	VolumeGiB    int
	Spot         bool
	// BlockID and BlockGroupArn target a capacity block (market type
	// capacity-block) by reservation id or resource group; with
	// OnDemandReservation the target has no market type: an On-Demand
	// Capacity Reservation.
	BlockID, BlockGroupArn string
	OnDemandReservation    bool
}

type fakeLC struct {
	Name, InstanceType string
	VolumeGiB          int
}

// call is one request as the fake saw it, Action and Version left out.
type call struct {
	Action string
	Params url.Values
	// Invocation is the SDK's amz-sdk-invocation-id: the same for every
	// attempt of one operation call.
	Invocation string
}

type failure struct {
	status int
	code   string
}

type fakeAWS struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	groups   map[string]*fakeASG
	lts      []fakeLT
	lcs      map[string]fakeLC
	calls    []call
	failures map[string][]failure
	// activities are each group's scaling activities, newest first.
	activities map[string][]fakeActivity
	// denied actions answer AccessDenied, as for a role without them.
	denied map[string]bool
	// stalled actions get no answer until the client gives up (or the
	// test ends: quit), as from an endpoint that stopped responding.
	stalled map[string]bool
	quit    chan struct{}
	// pageSize caps every page, so small fixtures still page.
	pageSize int
	requests int
	// reservations are EC2 capacity reservations by id.
	reservations map[string]fakeReservation
}

// fakeActivity is a scaling activity in the shape DescribeScalingActivities
// returns it.
type fakeActivity struct {
	ActivityId           string `xml:"ActivityId"`
	AutoScalingGroupName string `xml:"AutoScalingGroupName"`
	Description          string `xml:"Description"`
	Cause                string `xml:"Cause"`
	StartTime            string `xml:"StartTime"`
	StatusCode           string `xml:"StatusCode"`
	StatusMessage        string `xml:"StatusMessage,omitempty"`
	Progress             int    `xml:"Progress"`
}

func newFakeAWS(t *testing.T, groups ...fakeASG) *fakeAWS {
	f := &fakeAWS{t: t, groups: map[string]*fakeASG{}, lcs: map[string]fakeLC{}, failures: map[string][]failure{},
		activities: map[string][]fakeActivity{}, denied: map[string]bool{}, stalled: map[string]bool{}, quit: make(chan struct{}), pageSize: 100,
		reservations: map[string]fakeReservation{}}
	for _, g := range groups {
		f.putGroup(g)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.quit) }) // runs first: stalled requests end
	return f
}

func (f *fakeAWS) putGroup(g fakeASG) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups[g.Name] = &g
}

func (f *fakeAWS) group(name string) fakeASG {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.groups[name]
}

// failNext makes the next n requests of action fail.
func (f *fakeAWS) failNext(action string, n, status int, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.failures[action] = append(f.failures[action], failure{status, code})
	}
}

// invocationsOf is callsOf with the SDK's retries of one call counted once
// (the transport may retry a request whose connection the test server
// closed, which the test does not control).
func (f *fakeAWS) invocationsOf(action string) []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []url.Values
	seen := map[string]bool{}
	for _, c := range f.calls {
		if c.Action == action && (c.Invocation == "" || !seen[c.Invocation]) {
			seen[c.Invocation] = true
			out = append(out, c.Params)
		}
	}
	return out
}

// callsOf returns the parameters of every request of action, in order.
func (f *fakeAWS) callsOf(action string) []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []url.Values
	for _, c := range f.calls {
		if c.Action == action {
			out = append(out, c.Params)
		}
	}
	return out
}

func (f *fakeAWS) actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.calls))
	for _, c := range f.calls {
		out = append(out, c.Action)
	}
	return out
}

func (f *fakeAWS) resetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// clients are the real SDK clients pointed at the fake: static
// credentials, the standard retryer without waiting between attempts.
func (f *fakeAWS) clients() (*autoscaling.Client, *ec2.Client) {
	cfg := sdkaws.Config{
		Region:      testRegion,
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
		HTTPClient:  f.srv.Client(),
		Retryer: func() sdkaws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		},
	}
	as := autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) { o.BaseEndpoint = sdkaws.String(f.srv.URL) })
	e := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = sdkaws.String(f.srv.URL) })
	return as, e
}

var ec2Actions = map[string]bool{"DescribeLaunchTemplateVersions": true, "DescribeCapacityReservations": true}

func (f *fakeAWS) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake aws: reading body: %v", err)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		f.t.Errorf("fake aws: want a form-encoded POST, got %s %q (%v)", r.Method, r.Header.Get("Content-Type"), err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	action := form.Get("Action")
	service, version := "autoscaling", "2011-01-01"
	if ec2Actions[action] {
		service, version = "ec2", "2016-11-15"
	}
	if got := form.Get("Version"); got != version {
		f.t.Errorf("fake aws: %s: Version %q, want %q", action, got, version)
	}
	if err := verifySigV4(r, body, service); err != nil {
		f.t.Errorf("fake aws: %s: %v", action, err)
		f.writeError(w, service, http.StatusForbidden, "SignatureDoesNotMatch", err.Error())
		return
	}
	params := url.Values{}
	for k, v := range form {
		if k != "Action" && k != "Version" {
			params[k] = v
		}
	}
	f.mu.Lock()
	f.requests++
	reqID := f.requests
	f.calls = append(f.calls, call{Action: action, Params: params, Invocation: r.Header.Get("amz-sdk-invocation-id")})
	var fail *failure
	denied, stalled := f.denied[action], f.stalled[action]
	if q := f.failures[action]; len(q) > 0 {
		fail, f.failures[action] = &q[0], q[1:]
	}
	f.mu.Unlock()
	if stalled {
		select {
		case <-r.Context().Done():
		case <-f.quit:
		}
		return
	}
	if fail != nil {
		f.writeError(w, service, fail.status, fail.code, "injected by the test")
		return
	}
	if denied {
		f.writeError(w, service, http.StatusForbidden, "AccessDenied", "User: arn:aws:sts::123456789012:assumed-role/gpuscale is not authorized to perform: autoscaling:"+action)
		return
	}
	result, err := f.dispatch(action, params)
	if err != nil {
		ae := err.(apiError)
		f.writeError(w, service, http.StatusBadRequest, ae.code, ae.msg)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	if service == "ec2" {
		fmt.Fprintf(w, `<%sResponse xmlns="%s"><requestId>req-%d</requestId>%s</%sResponse>`, action, ec2Namespace, reqID, result, action)
		return
	}
	fmt.Fprintf(w, `<%sResponse xmlns="%s"><%sResult>%s</%sResult><ResponseMetadata><RequestId>req-%d</RequestId></ResponseMetadata></%sResponse>`,
		action, asNamespace, action, result, action, reqID, action)
}

// apiError is an error the real service would return with status 400.
type apiError struct{ code, msg string }

func (e apiError) Error() string { return e.code + ": " + e.msg }

func validationError(format string, args ...any) error {
	return apiError{"ValidationError", fmt.Sprintf(format, args...)}
}

func (f *fakeAWS) writeError(w http.ResponseWriter, service string, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(msg))
	if service == "ec2" {
		fmt.Fprintf(w, `<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>req-err</RequestID></Response>`, code, b.String())
		return
	}
	typ := "Sender"
	if status >= 500 {
		typ = "Receiver"
	}
	fmt.Fprintf(w, `<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>req-err</RequestId></ErrorResponse>`, asNamespace, typ, code, b.String())
}

var authHeader = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([a-z0-9-]+)/([a-z0-9]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// verifySigV4 checks the Authorization header's form and scope, then signs
// the same request (the headers it says it signed) with the test
// credentials and compares the signatures.
func verifySigV4(r *http.Request, body []byte, service string) error {
	h := r.Header.Get("Authorization")
	m := authHeader.FindStringSubmatch(h)
	if m == nil {
		return fmt.Errorf("malformed Authorization header %q", h)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	switch {
	case m[1] != testAccessKey:
		return fmt.Errorf("credential %q, want %q", m[1], testAccessKey)
	case !strings.HasPrefix(amzDate, m[2]):
		return fmt.Errorf("credential date %s does not match X-Amz-Date %q", m[2], amzDate)
	case m[3] != testRegion || m[4] != service:
		return fmt.Errorf("credential scope %s/%s, want %s/%s", m[3], m[4], testRegion, service)
	}
	signed := strings.Split(m[5], ";")
	if !sort.StringsAreSorted(signed) || !contains(signed, "host") || !contains(signed, "x-amz-date") {
		return fmt.Errorf("SignedHeaders %q must be sorted and include host and x-amz-date", m[5])
	}
	when, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil {
		return fmt.Errorf("X-Amz-Date %q: %v", amzDate, err)
	}
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	again.ContentLength = 0
	for _, name := range signed {
		switch name {
		case "host":
		case "content-length":
			again.ContentLength = int64(len(body))
		default:
			again.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	sum := sha256.Sum256(body)
	creds := sdkaws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), service, testRegion, when); err != nil {
		return err
	}
	if want := again.Header.Get("Authorization"); want != h {
		return fmt.Errorf("signature does not verify:\n got %s\nwant %s", h, want)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// members reads a list parameter: Name.member.1, Name.member.2, ... (or
// Name.1, ... for EC2 when member is "").
func members(p url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		k := fmt.Sprintf("%s.%d", prefix, i)
		if _, ok := p[k]; !ok {
			return out
		}
		out = append(out, p.Get(k))
	}
}

// page cuts items by NextToken and MaxRecords, returning the next token.
func (f *fakeAWS) page(p url.Values, n int) (start, end int, next string) {
	size := f.pageSize
	if mr := p.Get("MaxRecords"); mr != "" {
		var v int
		fmt.Sscan(mr, &v)
		size = min(size, v)
	}
	if tok := p.Get("NextToken"); tok != "" {
		fmt.Sscanf(tok, "page-%d", &start)
	}
	end = min(start+size, n)
	if end < n {
		next = fmt.Sprintf("page-%d", end)
	}
	return start, end, next
}

// element marshals v as an XML element named name.
func element(name string, v any) string {
	var b bytes.Buffer
	if err := xml.NewEncoder(&b).EncodeElement(v, xml.StartElement{Name: xml.Name{Local: name}}); err != nil {
		panic(err)
	}
	return b.String()
}
