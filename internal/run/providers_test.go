package run

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/compute/metadata"
)

// awsEnv isolates the SDK's default chain from the machine: static
// credentials from the environment, no shared files, no instance metadata
// unless imds is non-empty (then it is the metadata endpoint).
func awsEnv(t *testing.T, imds string) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           "AKIDTEST",
		"AWS_SECRET_ACCESS_KEY":       "secret",
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  "",
		"AWS_DEFAULT_REGION":          "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_ROLE_ARN":                "",
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	if imds != "" {
		t.Setenv("AWS_EC2_METADATA_DISABLED", "false")
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds)
	}
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// queryServer answers the AWS query protocol with a fixed body per Action
// and records each request's Action and Authorization header.
type queryServer struct {
	mu       sync.Mutex
	actions  []string
	auth     []string
	response map[string]string
}

func newQueryServer(t *testing.T, response map[string]string) (*queryServer, string) {
	q := &queryServer{response: response}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		action := form.Get("Action")
		q.mu.Lock()
		q.actions = append(q.actions, action)
		q.auth = append(q.auth, r.Header.Get("Authorization"))
		q.mu.Unlock()
		out, ok := q.response[action]
		if !ok {
			http.Error(w, "unexpected action "+action, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(srv.Close)
	return q, srv.URL
}

func (q *queryServer) seen() (actions, auth []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.actions...), append([]string(nil), q.auth...)
}

const (
	asgResponse = `<DescribeAutoScalingGroupsResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/">
<DescribeAutoScalingGroupsResult><AutoScalingGroups><member>
<AutoScalingGroupName>gpu-asg</AutoScalingGroupName><MinSize>0</MinSize><MaxSize>4</MaxSize><DesiredCapacity>0</DesiredCapacity>
<AvailabilityZones><member>eu-west-1a</member></AvailabilityZones>
<LaunchTemplate><LaunchTemplateId>lt-0123</LaunchTemplateId><Version>$Latest</Version></LaunchTemplate>
<Instances></Instances><Tags></Tags>
</member></AutoScalingGroups></DescribeAutoScalingGroupsResult>
<ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>`
	ltResponse = `<DescribeLaunchTemplateVersionsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r2</requestId>
<launchTemplateVersionSet><item><launchTemplateId>lt-0123</launchTemplateId><versionNumber>3</versionNumber>
<launchTemplateData><instanceType>g5.xlarge</instanceType></launchTemplateData></item></launchTemplateVersionSet>
</DescribeLaunchTemplateVersionsResponse>`
)

func TestNewAWSProviderUsesCloudConfigEndpointsAndRegion(t *testing.T) {
	awsEnv(t, "")
	t.Setenv("AWS_REGION", "us-east-2") // region in --cloud-config wins over it
	as, asURL := newQueryServer(t, map[string]string{"DescribeAutoScalingGroups": asgResponse})
	ec2, ec2URL := newQueryServer(t, map[string]string{"DescribeLaunchTemplateVersions": ltResponse})
	cc := writeFile(t, "aws.yaml", "region: eu-west-1\nautoScalingEndpoint: "+asURL+"\nec2Endpoint: "+ec2URL+
		"\nprices: {g5.xlarge: 9.5}\n")
	shell := ShellOptions{CloudConfig: cc, NodeGroups: []NodeGroupSpec{{Min: 0, Max: 4, Name: "gpu-asg"}}}

	cp, err := newAWSProvider(context.Background(), shell, quietLogger())
	if err != nil {
		t.Fatalf("newAWSProvider: %v", err)
	}
	if cp.Name() != "aws" {
		t.Errorf("Name() = %q, want aws", cp.Name())
	}
	if err := cp.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	groups := cp.NodeGroups()
	if len(groups) != 1 {
		t.Fatalf("NodeGroups() = %d groups, want 1: %+v", len(groups), groups)
	}
	g := groups[0]
	if g.ID != "gpu-asg" || g.InstanceType != "g5.xlarge" || g.MaxSize != 4 || g.PricePerHour != 9.5 {
		t.Errorf("group = {ID:%s InstanceType:%s MaxSize:%d PricePerHour:%v}, want {gpu-asg g5.xlarge 4 9.5} (price from --cloud-config)",
			g.ID, g.InstanceType, g.MaxSize, g.PricePerHour)
	}
	for name, q := range map[string]*queryServer{"autoscaling": as, "ec2": ec2} {
		actions, auth := q.seen()
		if len(actions) == 0 {
			t.Errorf("%s endpoint from --cloud-config got no request", name)
			continue
		}
		for _, a := range auth {
			if want := "Credential=AKIDTEST/"; !strings.Contains(a, want) {
				t.Errorf("%s Authorization %q lacks %q (environment credentials)", name, a, want)
			}
			if want := "/eu-west-1/" + name + "/aws4_request"; !strings.Contains(a, want) {
				t.Errorf("%s Authorization %q lacks %q (region from --cloud-config)", name, a, want)
			}
		}
	}
}

func TestNewAWSProviderRegionFromInstanceMetadata(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = io.WriteString(w, "token")
		case r.URL.Path == "/latest/dynamic/instance-identity/document":
			_, _ = io.WriteString(w, `{"region":"ap-south-1","availabilityZone":"ap-south-1a"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(imds.Close)
	awsEnv(t, imds.URL)
	as, asURL := newQueryServer(t, map[string]string{"DescribeAutoScalingGroups": asgResponse})
	_, ec2URL := newQueryServer(t, map[string]string{"DescribeLaunchTemplateVersions": ltResponse})
	cc := writeFile(t, "aws.yaml", "autoScalingEndpoint: "+asURL+"\nec2Endpoint: "+ec2URL+"\n")
	shell := ShellOptions{CloudConfig: cc, NodeGroups: []NodeGroupSpec{{Min: 0, Max: 4, Name: "gpu-asg"}}}

	cp, err := newAWSProvider(context.Background(), shell, quietLogger())
	if err != nil {
		t.Fatalf("newAWSProvider: %v", err)
	}
	if err := cp.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	_, auth := as.seen()
	if len(auth) == 0 || !strings.Contains(auth[0], "/ap-south-1/autoscaling/") {
		t.Errorf("Authorization headers %q: want the region from instance metadata, ap-south-1", auth)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(paths, ","), "GET /latest/dynamic/instance-identity/document") {
		t.Errorf("instance metadata requests %q: want the region read", paths)
	}
}

func TestNewAWSProviderErrorsNameTheFlag(t *testing.T) {
	cases := []struct {
		name   string
		config string // file contents; "-" for a missing file
		groups []NodeGroupSpec
		want   []string
	}{
		{name: "missing file", config: "-", want: []string{"--cloud-config", "aws.yaml"}},
		{name: "unknown field", config: "regoin: eu-west-1\n", want: []string{"--cloud-config", "regoin"}},
		{name: "bad refresh interval", config: "region: eu-west-1\nrefreshInterval: soon\n", want: []string{"--cloud-config", "refreshInterval", "soon"}},
		{name: "no region", config: "prices: {g5.xlarge: 1}\n", want: []string{"--cloud-provider=aws", "region"}},
		{name: "no groups", config: "region: eu-west-1\n", groups: []NodeGroupSpec{}, want: []string{"--nodes", "--node-group-auto-discovery"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			awsEnv(t, "")
			path := filepath.Join(t.TempDir(), "aws.yaml")
			if tc.config != "-" {
				path = writeFile(t, "aws.yaml", tc.config)
			}
			groups := tc.groups
			if groups == nil {
				groups = []NodeGroupSpec{{Min: 0, Max: 2, Name: "gpu-asg"}}
			}
			_, err := newAWSProvider(context.Background(), ShellOptions{CloudConfig: path, NodeGroups: groups}, quietLogger())
			if err == nil {
				t.Fatal("newAWSProvider succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// gceEnv gives Application Default Credentials that parse without network
// access (a token is only fetched on the first API call) and points the
// metadata client at host.
func gceEnv(t *testing.T, metadataHost string) {
	t.Helper()
	creds := writeFile(t, "adc.json", `{"type":"authorized_user","client_id":"id","client_secret":"secret","refresh_token":"token"}`)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", creds)
	t.Setenv("GCE_METADATA_HOST", metadataHost)
}

// metadataServer answers the GCE metadata paths in values and records the
// requested paths; other paths are 404 (not defined).
func metadataServer(t *testing.T, values map[string]string) (host string, requested func() []string) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "missing Metadata-Flavor", http.StatusForbidden)
			return
		}
		v, ok := values[strings.TrimPrefix(r.URL.Path, "/computeMetadata/v1/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Metadata-Flavor", "Google")
		_, _ = io.WriteString(w, v)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), paths...)
	}
}

func TestNewGCEProviderStaticGroupsNeedNoMetadata(t *testing.T) {
	host, requested := metadataServer(t, nil)
	gceEnv(t, host)
	cc := writeFile(t, "gce.yaml", "refreshInterval: 45s\n")
	shell := ShellOptions{CloudConfig: cc, NodeGroups: []NodeGroupSpec{{Min: 0, Max: 3,
		Name: "https://www.googleapis.com/compute/v1/projects/proj-one/zones/us-central1-a/instanceGroups/gpu-mig"}}}
	cp, err := newGCEProvider(context.Background(), shell, quietLogger())
	if err != nil {
		t.Fatalf("newGCEProvider: %v", err)
	}
	if cp.Name() != "gce" {
		t.Errorf("Name() = %q, want gce", cp.Name())
	}
	if got := requested(); len(got) != 0 {
		t.Errorf("metadata server asked %q; static groups with no auto-discovery need nothing from it", got)
	}
}

func TestNewGCEProviderProjectFromMetadata(t *testing.T) {
	host, requested := metadataServer(t, map[string]string{"project/project-id": "meta-project"})
	gceEnv(t, host)
	cc := writeFile(t, "gce.yaml", "zones: [us-central1-a]\n")
	shell := ShellOptions{CloudConfig: cc, AutoDiscovery: []AutoDiscoverySpec{{Kind: "mig", NamePrefix: "gpu-", MinSize: 0, MaxSize: 4}}}
	if _, err := newGCEProvider(context.Background(), shell, quietLogger()); err != nil {
		t.Fatalf("newGCEProvider: %v", err)
	}
	got := requested()
	if len(got) != 1 || got[0] != "/computeMetadata/v1/project/project-id" {
		t.Errorf("metadata requests %q, want only the project id (zones come from --cloud-config)", got)
	}
}

func TestNewGCEProviderErrorsNameTheFlag(t *testing.T) {
	mig := []NodeGroupSpec{{Min: 0, Max: 3, Name: "https://www.googleapis.com/compute/v1/projects/proj-one/zones/us-central1-a/instanceGroups/gpu-mig"}}
	discover := []AutoDiscoverySpec{{Kind: "mig", NamePrefix: "gpu-", MaxSize: 4}}
	cases := []struct {
		name     string
		config   string
		groups   []NodeGroupSpec
		discover []AutoDiscoverySpec
		want     []string
	}{
		{name: "missing file", config: "-", groups: mig, want: []string{"--cloud-config", "gce.yaml"}},
		{name: "unknown field", config: "projekt: proj-one\n", groups: mig, want: []string{"--cloud-config", "projekt"}},
		{name: "bad zone", config: "zones: [Not_A_Zone]\n", groups: mig, want: []string{"--cloud-config", "zones[0]", "Not_A_Zone"}},
		// The metadata server defines no zone for this instance.
		{name: "zone not on metadata server", config: "project: proj-one\n", discover: discover, want: []string{"--cloud-provider=gce", "zone"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host, _ := metadataServer(t, nil)
			gceEnv(t, host)
			path := filepath.Join(t.TempDir(), "gce.yaml")
			if tc.config != "-" {
				path = writeFile(t, "gce.yaml", tc.config)
			}
			shell := ShellOptions{CloudConfig: path, NodeGroups: tc.groups, AutoDiscovery: tc.discover}
			_, err := newGCEProvider(context.Background(), shell, quietLogger())
			if err == nil {
				t.Fatal("newGCEProvider succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestNewGCEProviderOffGCENamesWhatIsMissing(t *testing.T) {
	gceEnv(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if metadata.OnGCEWithContext(ctx) {
		t.Skip("a metadata server answers here: this test needs a machine off GCE")
	}
	discover := []AutoDiscoverySpec{{Kind: "mig", NamePrefix: "gpu-", MaxSize: 4}}
	for config, want := range map[string]string{
		"project: proj-one\n":      "--node-group-auto-discovery=mig: set zones in --cloud-config",
		"zones: [us-central1-a]\n": "--node-group-auto-discovery=mig: set project in --cloud-config",
		"clusterName: prod\n":      "--node-group-auto-discovery=mig: set project and zones in --cloud-config",
	} {
		shell := ShellOptions{CloudConfig: writeFile(t, "gce.yaml", config), AutoDiscovery: discover}
		_, err := newGCEProvider(ctx, shell, quietLogger())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %q: error %v, want %q", config, err, want)
		}
	}
}

// A malformed instance-group URL in --nodes is reported as such, before
// credentials are looked for: here there are none at all.
func TestNewGCEProviderChecksNodesBeforeCredentials(t *testing.T) {
	host, requested := metadataServer(t, nil)
	t.Setenv("GCE_METADATA_HOST", host)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "no-such-credentials.json"))
	cc := writeFile(t, "gce.yaml", "project: proj-one\n")
	for _, bad := range []string{
		"projects/proj-one/zones/us-central1-a/instanceGroup/gpu-mig",
		"https://www.googleapis.com/compute/v1/projects/proj-one/regions/us-central1/instanceGroups/gpu-mig",
		"gpu-mig",
	} {
		shell := ShellOptions{CloudConfig: cc, NodeGroups: []NodeGroupSpec{
			{Min: 0, Max: 3, Name: "https://www.googleapis.com/compute/v1/projects/proj-one/zones/us-central1-a/instanceGroups/ok"},
			{Min: 1, Max: 2, Name: bad},
		}}
		_, err := newGCEProvider(context.Background(), shell, quietLogger())
		if err == nil {
			t.Fatalf("%s: accepted", bad)
		}
		msg := err.Error()
		if !strings.Contains(msg, "--nodes=1:2:"+bad) || !strings.Contains(msg, "instance group URL") || strings.Contains(msg, "credentials") {
			t.Errorf("%s: error %q, want the --nodes value and the URL problem, not credentials", bad, msg)
		}
	}
	if got := requested(); len(got) != 0 {
		t.Errorf("metadata server asked %q before the flags were checked", got)
	}
}
