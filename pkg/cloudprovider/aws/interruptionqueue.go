package aws

import (
	"context"
	"encoding/json"
	"fmt"
	neturl "net/url"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/utils/ptr"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
)

// The EC2 interruption queue: where the operator enables it
// (--aws-interruption-queue), EventBridge rules send EC2's and AWS
// Health's events about instances being taken away to an SQS queue, and
// the provider reads it at each Refresh. Each event names an instance; the
// shell puts the matching interruption taint on its node, so the core sees
// it as it sees the AWS Node Termination Handler's taints. Every message
// read is deleted: a handled one, and a malformed one (logged with its
// message id), so that nothing is read twice or blocks the queue.

// InterruptionQueueAPI is the part of the SQS client the provider uses;
// *sqs.Client implements it.
type InterruptionQueueAPI interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// EventBridge detail types the queue carries.
const (
	EventSpotInterruption = "EC2 Spot Instance Interruption Warning"
	EventRebalance        = "EC2 Instance Rebalance Recommendation"
	EventStateChange      = "EC2 Instance State-change Notification"
	EventHealth           = "AWS Health Event"
)

// Interruption taints the queue's events become, the AWS Node Termination
// Handler's own (autoscaler.TaintAWS*), so that --interruption-taint sets
// their notices for both.
const (
	taintSpotInterruption = "aws-node-termination-handler/spot-itn"
	taintRebalance        = "aws-node-termination-handler/rebalance-recommendation"
	taintTermination      = "aws-node-termination-handler/asg-lifecycle-termination"
)

// receiveBatches bounds how many ReceiveMessage calls one Refresh makes
// (ten messages each), so a flooded queue cannot hold the loop.
const receiveBatches = 10

// event is the part of an EventBridge event the provider reads.
type event struct {
	ID         string `json:"id"`
	DetailType string `json:"detail-type"`
	Source     string `json:"source"`
	Detail     struct {
		InstanceID string `json:"instance-id"`
		State      string `json:"state"`
		// AWS Health
		Service           string `json:"service"`
		EventTypeCategory string `json:"eventTypeCategory"`
		EventTypeCode     string `json:"eventTypeCode"`
		AffectedEntities  []struct {
			EntityValue string `json:"entityValue"`
		} `json:"affectedEntities"`
	} `json:"detail"`
}

// interruptionsOf reads one message body: the instances it says are being
// taken away, and the taint for them; none for an event about something
// else (an instance starting, a Health event of another kind); an error
// for a body that is not such an event.
func interruptionsOf(body string) ([]cloudprovider.NodeInterruption, error) {
	var ev event
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return nil, fmt.Errorf("not an EventBridge event: %w", err)
	}
	one := func(taint, reason string) ([]cloudprovider.NodeInterruption, error) {
		if ev.Detail.InstanceID == "" {
			return nil, fmt.Errorf("%q event without detail.instance-id", ev.DetailType)
		}
		return []cloudprovider.NodeInterruption{{InstanceID: ev.Detail.InstanceID, TaintKey: taint, Reason: reason}}, nil
	}
	switch ev.DetailType {
	case EventSpotInterruption:
		return one(taintSpotInterruption, "EC2 spot interruption warning")
	case EventRebalance:
		return one(taintRebalance, "EC2 rebalance recommendation")
	case EventStateChange:
		switch ev.Detail.State {
		case "stopping", "stopped", "shutting-down", "terminated":
			return one(taintTermination, "EC2 instance "+ev.Detail.State)
		case "":
			return nil, fmt.Errorf("%q event without detail.state", ev.DetailType)
		}
		return nil, nil // pending, running: nothing is taken away
	case EventHealth:
		if ev.Detail.Service != "EC2" || ev.Detail.EventTypeCategory != "scheduledChange" {
			return nil, nil
		}
		var out []cloudprovider.NodeInterruption
		for _, e := range ev.Detail.AffectedEntities {
			if strings.HasPrefix(e.EntityValue, "i-") {
				out = append(out, cloudprovider.NodeInterruption{InstanceID: e.EntityValue, TaintKey: taintRebalance,
					Reason: "AWS Health scheduled change " + ev.Detail.EventTypeCode})
			}
		}
		return out, nil
	case "":
		return nil, fmt.Errorf("not an EventBridge event: no detail-type")
	}
	return nil, nil
}

// readInterruptionQueue receives what the queue holds, up to
// receiveBatches calls, deletes every message read and keeps the
// interruptions for Interruptions. A failed call is logged and ends the
// read: the messages left are read at the next Refresh.
func (p *Provider) readInterruptionQueue(ctx context.Context) {
	q := p.opts.InterruptionQueue
	if q.API == nil || q.Queue == "" {
		return
	}
	url, err := p.queueURL(ctx)
	if err != nil {
		p.log.Error("aws interruption queue", "queue", q.Queue, "err", err)
		return
	}
	var found []cloudprovider.NodeInterruption
	for range receiveBatches {
		out, err := within(ctx, p.timeout, func(ctx context.Context) (*sqs.ReceiveMessageOutput, error) {
			return q.API.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
		})
		if err != nil {
			p.log.Error("aws interruption queue: ReceiveMessage", "queue", url, "err", err)
			break
		}
		for _, m := range out.Messages {
			id := ptr.Deref(m.MessageId, "")
			ins, err := interruptionsOf(ptr.Deref(m.Body, ""))
			if err != nil {
				p.log.Warn("aws interruption queue: message not understood; deleted", "queue", url, "messageId", id, "err", err)
			}
			found = append(found, ins...)
			_, err = within(ctx, p.timeout, func(ctx context.Context) (*sqs.DeleteMessageOutput, error) {
				return q.API.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle})
			})
			if err != nil {
				p.log.Error("aws interruption queue: DeleteMessage", "queue", url, "messageId", id, "err", err)
			}
		}
		if len(out.Messages) == 0 {
			break
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].InstanceID < found[j].InstanceID })
	p.mu.Lock()
	p.interruptions = append(p.interruptions, found...)
	p.mu.Unlock()
}

// queueURL is the queue's URL: given, or looked up by name once.
func (p *Provider) queueURL(ctx context.Context) (string, error) {
	q := p.opts.InterruptionQueue
	if strings.HasPrefix(q.Queue, "https://") || strings.HasPrefix(q.Queue, "http://") {
		return q.Queue, nil
	}
	if p.queueURLCache != "" {
		return p.queueURLCache, nil
	}
	out, err := within(ctx, p.timeout, func(ctx context.Context) (*sqs.GetQueueUrlOutput, error) {
		return q.API.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &q.Queue})
	})
	if err != nil {
		return "", fmt.Errorf("GetQueueUrl %s: %w", q.Queue, err)
	}
	p.queueURLCache = ptr.Deref(out.QueueUrl, "")
	return p.queueURLCache, nil
}

// Interruptions returns the instances the queue said are being taken
// away since the last call (cloudprovider.InterruptionReporter).
func (p *Provider) Interruptions() []cloudprovider.NodeInterruption {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.interruptions
	p.interruptions = nil
	return out
}

// ValidateQueue checks a --aws-interruption-queue value: an SQS queue
// name (1 to 80 letters, digits, hyphens and underscores, a FIFO queue's
// ending in .fifo) or the queue's https URL.
func ValidateQueue(q string) error {
	if strings.HasPrefix(q, "https://") || strings.HasPrefix(q, "http://") {
		u, err := neturl.Parse(q)
		if err != nil || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return fmt.Errorf("want a queue name or its URL (https://sqs.<region>.amazonaws.com/<account>/<name>), got %q", q)
		}
		return nil
	}
	name := strings.TrimSuffix(q, ".fifo")
	if name == "" || len(q) > 80 || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		return fmt.Errorf("want a queue name (1 to 80 letters, digits, - and _) or its URL, got %q", q)
	}
	return nil
}
