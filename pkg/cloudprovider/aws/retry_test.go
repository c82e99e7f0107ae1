package aws

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"
)

// The SDK's standard retryer (three attempts) handles throttling and
// server errors; the provider adds no retry loop of its own.
func TestThrottlingAndServerErrorsAreRetriedBySDK(t *testing.T) {
	cases := []struct {
		name   string
		action string
		status int
		code   string
		run    func(p testProvider) error
	}{
		{"Auto Scaling throttling", "DescribeAutoScalingGroups", 400, "Throttling",
			func(p testProvider) error { return p.Refresh(context.Background()) }},
		{"Auto Scaling unavailable", "SetDesiredCapacity", 503, "ServiceUnavailable",
			func(p testProvider) error { return p.IncreaseSize(context.Background(), "gpu-g5", 1) }},
		{"Auto Scaling internal failure", "TerminateInstanceInAutoScalingGroup", 500, "InternalFailure",
			func(p testProvider) error {
				return p.DeleteNodes(context.Background(), "cpu-m5", []*v1.Node{node("a", "aws:///us-east-1a/i-0000000000000000a")})
			}},
		{"EC2 request limit", "DescribeLaunchTemplateVersions", 503, "RequestLimitExceeded",
			func(p testProvider) error { return p.Refresh(context.Background()) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := standardFake(t, cpuGroup(), g5Group())
			p := newTestProvider(t, f, Options{Groups: []GroupSpec{{Name: "cpu-m5", MinSize: 0, MaxSize: 5}}, AutoDiscovery: discoverAll()})
			if c.action != "DescribeAutoScalingGroups" && c.action != "DescribeLaunchTemplateVersions" {
				p.refresh(t)
			}
			before := len(f.callsOf(c.action))
			f.failNext(c.action, 2, c.status, c.code)
			if err := c.run(p); err != nil {
				t.Fatalf("two failures then success: %v", err)
			}
			if got := len(f.callsOf(c.action)) - before; got < 3 {
				t.Fatalf("%s made %d attempts, want at least 3 (two failures, one success)", c.action, got)
			}
			if errs := p.Problems(); len(errs) != 0 {
				t.Fatalf("problems after a retried call: %v", errs)
			}
		})
	}
}

func TestPersistentThrottlingNamesTheGroupAndTheCall(t *testing.T) {
	f := standardFake(t, cpuGroup(), g5Group())
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	f.failNext("SetDesiredCapacity", 3, 400, "Throttling")
	err := p.IncreaseSize(context.Background(), "gpu-g5", 1)
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "Throttling" {
		t.Fatalf("error %v, want the SDK's Throttling API error wrapped", err)
	}
	for _, want := range []string{"node group gpu-g5", "SetDesiredCapacity 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if n := len(f.callsOf("SetDesiredCapacity")); n != 3 {
		t.Fatalf("%d attempts, want the standard retryer's 3", n)
	}
	// A failed change marks the cache stale: the next Refresh reloads.
	f.resetCalls()
	p.refresh(t)
	if len(f.callsOf("DescribeAutoScalingGroups")) == 0 {
		t.Fatal("no reload after a failed change")
	}
}

func TestRefreshFailsWhenGroupsCannotBeListedAndKeepsTheCache(t *testing.T) {
	f := standardFake(t, cpuGroup(), g5Group())
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	p.clock.Step(time.Hour)
	f.failNext("DescribeAutoScalingGroups", 3, 500, "InternalFailure")
	err := p.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), "DescribeAutoScalingGroups") || !strings.Contains(err.Error(), "asg:tag="+tagEnabled+","+tagCluster) {
		t.Fatalf("Refresh: %v, want an error naming the call and the discovery", err)
	}
	if got := len(p.NodeGroups()); got != 2 {
		t.Fatalf("%d groups after a failed reload, want the 2 cached", got)
	}
}

func TestTemplateLookupFailureKeepsThePreviousTemplate(t *testing.T) {
	f := standardFake(t, g5Group())
	p := newTestProvider(t, f, Options{AutoDiscovery: discoverAll()})
	p.refresh(t)
	p.clock.Step(time.Hour)
	f.failNext("DescribeLaunchTemplateVersions", 3, 503, "RequestLimitExceeded")
	p.refresh(t)
	g := p.NodeGroups()[0]
	if g.Template == nil || g.InstanceType != "g5.xlarge" {
		t.Fatalf("template %v, type %q: want the previous g5.xlarge template kept", g.Template, g.InstanceType)
	}
	probs := p.Problems()
	if len(probs) != 1 || !strings.Contains(probs[0].Error(), "RequestLimitExceeded") || !strings.Contains(probs[0].Error(), "previous refresh kept") {
		t.Fatalf("problems %v", probs)
	}
	// A launch template that is gone is an answer, not a failed call: the
	// old template is dropped.
	f.mu.Lock()
	f.lts = nil
	f.mu.Unlock()
	p.clock.Step(time.Hour)
	p.refresh(t)
	if g := p.NodeGroups()[0]; g.Template != nil {
		t.Fatal("the template of a deleted launch template was kept")
	}
	if probs := p.Problems(); len(probs) != 1 || !strings.Contains(probs[0].Error(), "InvalidLaunchTemplateId.NotFound") {
		t.Fatalf("problems %v", probs)
	}
}

func TestFakeRejectsAWrongSignature(t *testing.T) {
	body := []byte("Action=DescribeAutoScalingGroups&Version=2011-01-01")
	hash := sha256.Sum256(body)
	sign := func(secret string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		creds := sdkaws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: secret}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(hash[:]), "autoscaling", testRegion, time.Now()); err != nil {
			t.Fatal(err)
		}
		return req
	}
	if err := verifySigV4(sign(testSecretKey), body, "autoscaling"); err != nil {
		t.Fatalf("right secret: %v", err)
	}
	req := sign("not-the-secret")
	if err := verifySigV4(req, body, "autoscaling"); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("wrong secret: %v", err)
	}
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x")
	if err := verifySigV4(req, body, "autoscaling"); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("malformed header: %v", err)
	}
}
