package aws

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// EventBridge events as EC2 and AWS Health send them.
const (
	spotWarning = `{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning",
"source":"aws.ec2","account":"123456789012","time":"2026-01-02T03:00:00Z","region":"us-east-1",
"resources":["arn:aws:ec2:us-east-1b:instance/i-0000000000000000a"],
"detail":{"instance-id":"i-0000000000000000a","instance-action":"terminate"}}`
	rebalance = `{"version":"0","id":"5b2b2a86-3d6a-4a37-8e6e-9f1f5e2e0b11","detail-type":"EC2 Instance Rebalance Recommendation",
"source":"aws.ec2","account":"123456789012","time":"2026-01-02T03:00:00Z","region":"us-east-1",
"resources":["arn:aws:ec2:us-east-1b:instance/i-0000000000000000b"],"detail":{"instance-id":"i-0000000000000000b"}}`
	stopping = `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification",
"source":"aws.ec2","account":"123456789012","time":"2026-01-02T03:00:00Z","region":"us-east-1",
"resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0000000000000000c"],"detail":{"instance-id":"i-0000000000000000c","state":"stopping"}}`
	startedRunning = `{"version":"0","id":"8bf73129-1428-4cd3-a780-95db273d1603","detail-type":"EC2 Instance State-change Notification",
"source":"aws.ec2","account":"123456789012","time":"2026-01-02T03:00:00Z","region":"us-east-1",
"resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0000000000000000e"],"detail":{"instance-id":"i-0000000000000000e","state":"running"}}`
	retirement = `{"version":"0","id":"121345678-1234-1234-1234-123456789012","detail-type":"AWS Health Event","source":"aws.health",
"account":"123456789012","time":"2026-01-02T03:00:00Z","region":"us-east-1","resources":["i-0000000000000000d"],
"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED_1",
"service":"EC2","eventTypeCode":"AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange",
"startTime":"Sat, 05 Jan 2026 15:00:00 GMT","eventDescription":[{"language":"en_US","latestDescription":"retirement"}],
"affectedEntities":[{"entityValue":"i-0000000000000000d"}]}}`
)

func queueProvider(t *testing.T, q *fakeSQS, queue string) testProvider {
	f := standardFake(t, cpuGroup())
	return newTestProvider(t, f, Options{AutoDiscovery: discoverAll(),
		InterruptionQueue: InterruptionQueue{API: q.client(), Queue: queue}})
}

// Every kind of event becomes the interruption taint of its instance; the
// events about nothing being taken away and the malformed ones are
// dropped; every message read is deleted, and each event is reported once.
func TestInterruptionQueueEventsBecomeTaints(t *testing.T) {
	q := newFakeSQS(t, "gpuscale-interruptions", spotWarning, "not json", rebalance, startedRunning,
		`{"id":"x","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`, stopping, retirement)
	p := queueProvider(t, q, "gpuscale-interruptions")
	var logs bytes.Buffer
	p.log = slog.New(slog.NewTextHandler(&logs, nil))
	p.refresh(t)
	for _, id := range []string{"msg-2", "msg-5"} { // "not json", and a warning without instance-id
		if !strings.Contains(logs.String(), "messageId="+id) {
			t.Errorf("malformed message %s not logged by its id:\n%s", id, logs.String())
		}
	}
	want := []cloudprovider.NodeInterruption{
		{InstanceID: "i-0000000000000000a", TaintKey: taintSpotInterruption, Reason: "EC2 spot interruption warning"},
		{InstanceID: "i-0000000000000000b", TaintKey: taintRebalance, Reason: "EC2 rebalance recommendation"},
		{InstanceID: "i-0000000000000000c", TaintKey: taintTermination, Reason: "EC2 instance stopping"},
		{InstanceID: "i-0000000000000000d", TaintKey: taintRebalance, Reason: "AWS Health scheduled change AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED"},
	}
	if got := p.Interruptions(); !reflect.DeepEqual(got, want) {
		t.Errorf("interruptions\n got %+v\nwant %+v", got, want)
	}
	if got := p.Interruptions(); len(got) != 0 {
		t.Errorf("reported again: %+v", got)
	}
	left, inFlight, deleted := q.state()
	if left != 0 || inFlight != 0 || len(deleted) != 7 {
		t.Errorf("queue: %d left, %d received and not deleted, deleted %v; want all 7 deleted", left, inFlight, deleted)
	}
	p.refresh(t) // an empty queue: nothing more
	if got := p.Interruptions(); len(got) != 0 {
		t.Errorf("from an empty queue: %+v", got)
	}
}

// The queue is named or given by URL: a name is looked up once.
func TestInterruptionQueueByNameOrURL(t *testing.T) {
	q := newFakeSQS(t, "gpuscale-interruptions", spotWarning)
	p := queueProvider(t, q, "gpuscale-interruptions")
	p.refresh(t)
	p.refresh(t)
	q2 := newFakeSQS(t, "gpuscale-interruptions", spotWarning)
	p2 := queueProvider(t, q2, q2.url())
	p2.refresh(t)
	if n := len(p2.Interruptions()); n != 1 {
		t.Errorf("by URL: %d interruptions, want 1", n)
	}
	count := func(q *fakeSQS, op string) int {
		q.mu.Lock()
		defer q.mu.Unlock()
		n := 0
		for _, o := range q.targets {
			if o == op {
				n++
			}
		}
		return n
	}
	if a, b := count(q, "GetQueueUrl"), count(q2, "GetQueueUrl"); a != 1 || b != 0 {
		t.Errorf("GetQueueUrl calls: %d by name (want 1), %d by URL (want 0)", a, b)
	}
}

// A queue that does not exist is logged; the provider goes on.
func TestInterruptionQueueMissingDoesNotStopRefresh(t *testing.T) {
	q := newFakeSQS(t, "gpuscale-interruptions", spotWarning)
	p := queueProvider(t, q, "no-such-queue")
	p.refresh(t)
	if len(p.NodeGroups()) == 0 || len(p.Interruptions()) != 0 {
		t.Errorf("groups %d, interruptions %v", len(p.NodeGroups()), p.Interruptions())
	}
}

// The queue's taints are the core's default interruption signals, so the
// events are handled without any --interruption-taint.
func TestInterruptionQueueTaintsAreDefaultSignals(t *testing.T) {
	known := map[string]bool{}
	for _, s := range autoscaler.DefaultInterruption().Signals {
		known[s.TaintKey] = true
	}
	for _, k := range []string{taintSpotInterruption, taintRebalance, taintTermination} {
		if !known[k] {
			t.Errorf("taint %s is not a default interruption signal", k)
		}
	}
}
