package aws

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// DefaultCallTimeout bounds each AWS call, its SDK retries included
// (Options.CallTimeout). The SDK sets no timeout of its own: without one a
// stalled endpoint would hold the autoscaling loop, and the leader Lease,
// until the liveness probe restarts the pod.
const DefaultCallTimeout = time.Minute

// within runs call with ctx bounded by d; a call that ran out of time says
// so.
func within[O any](ctx context.Context, d time.Duration, call func(context.Context) (O, error)) (O, error) {
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	out, err := call(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within the per-call timeout of %s: %w", d, err)
	}
	return out, err
}

// timedAutoScaling bounds every Auto Scaling call by a timeout.
type timedAutoScaling struct {
	api     AutoScalingAPI
	timeout time.Duration
}

func (t timedAutoScaling) DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, o ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return within(ctx, t.timeout, func(ctx context.Context) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
		return t.api.DescribeAutoScalingGroups(ctx, in, o...)
	})
}

func (t timedAutoScaling) DescribeAutoScalingInstances(ctx context.Context, in *autoscaling.DescribeAutoScalingInstancesInput, o ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error) {
	return within(ctx, t.timeout, func(ctx context.Context) (*autoscaling.DescribeAutoScalingInstancesOutput, error) {
		return t.api.DescribeAutoScalingInstances(ctx, in, o...)
	})
}

func (t timedAutoScaling) DescribeLaunchConfigurations(ctx context.Context, in *autoscaling.DescribeLaunchConfigurationsInput, o ...func(*autoscaling.Options)) (*autoscaling.DescribeLaunchConfigurationsOutput, error) {
	return within(ctx, t.timeout, func(ctx context.Context) (*autoscaling.DescribeLaunchConfigurationsOutput, error) {
		return t.api.DescribeLaunchConfigurations(ctx, in, o...)
	})
}

func (t timedAutoScaling) SetDesiredCapacity(ctx context.Context, in *autoscaling.SetDesiredCapacityInput, o ...func(*autoscaling.Options)) (*autoscaling.SetDesiredCapacityOutput, error) {
	return within(ctx, t.timeout, func(ctx context.Context) (*autoscaling.SetDesiredCapacityOutput, error) {
		return t.api.SetDesiredCapacity(ctx, in, o...)
	})
}

func (t timedAutoScaling) TerminateInstanceInAutoScalingGroup(ctx context.Context, in *autoscaling.TerminateInstanceInAutoScalingGroupInput, o ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error) {
	return within(ctx, t.timeout, func(ctx context.Context) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error) {
		return t.api.TerminateInstanceInAutoScalingGroup(ctx, in, o...)
	})
}

func (t timedAutoScaling) DescribeScalingActivities(ctx context.Context, in *autoscaling.DescribeScalingActivitiesInput, o ...func(*autoscaling.Options)) (*autoscaling.DescribeScalingActivitiesOutput, error) {
	return within(ctx, t.timeout, func(ctx context.Context) (*autoscaling.DescribeScalingActivitiesOutput, error) {
		return t.api.DescribeScalingActivities(ctx, in, o...)
	})
}

// timedEC2 bounds every EC2 call by a timeout.
type timedEC2 struct {
	api     EC2API
	timeout time.Duration
}

func (t timedEC2) DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, o ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	return within(ctx, t.timeout, func(ctx context.Context) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
		return t.api.DescribeLaunchTemplateVersions(ctx, in, o...)
	})
}

func (t timedEC2) DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, o ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error) {
	return within(ctx, t.timeout, func(ctx context.Context) (*ec2.DescribeCapacityReservationsOutput, error) {
		return t.api.DescribeCapacityReservations(ctx, in, o...)
	})
}
