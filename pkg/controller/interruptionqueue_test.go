package controller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// queueProvider is groupsProvider reporting interruption events once.
type queueProvider struct {
	groupsProvider
	events []cloudprovider.NodeInterruption
}

func (p *queueProvider) Interruptions() []cloudprovider.NodeInterruption {
	out := p.events
	p.events = nil
	return out
}

// An interruption event from the provider becomes the node's interruption
// taint, which the next loop's core reads as any interruption: the node
// is planned as removing. An event for an instance with no node is
// skipped.
func TestInterruptionEventTaintsTheNode(t *testing.T) {
	n := groupNode("spot-1", "g")
	n.Spec.ProviderID = "aws:///us-east-1a/i-0000000000000000a"
	other := groupNode("spot-2", "g")
	other.Spec.ProviderID = "aws:///us-east-1a/i-0000000000000000b"
	client := fake.NewClientset(n, other)
	cp := &queueProvider{groupsProvider: groupsProvider{groups: []string{"g"}}, events: []cloudprovider.NodeInterruption{
		{InstanceID: "i-0000000000000000a", TaintKey: autoscaler.TaintAWSSpotInterruption, Reason: "EC2 spot interruption warning"},
		{InstanceID: "i-00000000000000zzz", TaintKey: autoscaler.TaintAWSSpotInterruption, Reason: "EC2 spot interruption warning"},
	}}
	c := newTestController(t, client, cp, clocktesting.NewFakeClock(t0))
	indexer := c.factory.Core().V1().Nodes().Informer().GetIndexer()
	for _, node := range []any{n, other} {
		if err := indexer.Add(node); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := c.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if !hasTaintNamed(t, client, "spot-1", autoscaler.TaintAWSSpotInterruption) {
		t.Fatal("the interrupted instance's node is not tainted")
	}
	if hasTaintNamed(t, client, "spot-2", autoscaler.TaintAWSSpotInterruption) {
		t.Error("another node is tainted")
	}
	// The watch brings the tainted node; the next loop's core sees it.
	tainted, err := client.CoreV1().Nodes().Get(ctx, "spot-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := indexer.Update(tainted); err != nil {
		t.Fatal(err)
	}
	if err := c.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	var reason string
	for _, sn := range c.lastStatus.Nodes {
		if sn.Name == "spot-1" {
			reason = sn.Reason
		}
	}
	if reason != autoscaler.ReasonInterrupted {
		t.Errorf("spot-1 reason %q in the status, want %s", reason, autoscaler.ReasonInterrupted)
	}
}
