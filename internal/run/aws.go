package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/gpuscale/gpuscale/pkg/cloudprovider"
	awsprovider "github.com/gpuscale/gpuscale/pkg/cloudprovider/aws"
)

// newAWSProvider builds the Auto Scaling provider: credentials and region
// from the SDK's default chain (environment, shared files, EKS Pod
// Identity or IRSA web identity, instance role), the region falling back
// to the instance metadata service, --cloud-config overriding it, and the
// SDK's standard retryer on both clients.
func newAWSProvider(ctx context.Context, shell ShellOptions, logger *slog.Logger) (cloudprovider.CloudProvider, error) {
	cc, err := awsprovider.LoadConfig(shell.CloudConfig)
	if err != nil {
		return nil, err
	}
	load := []func(*config.LoadOptions) error{
		config.WithRetryer(func() sdkaws.Retryer { return retry.NewStandard() }),
		config.WithEC2IMDSRegion(),
	}
	if cc.Region != "" {
		load = append(load, config.WithRegion(cc.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("--cloud-provider=aws: loading the AWS configuration (region from --cloud-config, AWS_REGION, the shared configuration or the instance metadata service): %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("--cloud-provider=aws: no region: set AWS_REGION, run on EC2 (instance metadata), or set region in --cloud-config")
	}
	as := autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) {
		if cc.AutoScalingEndpoint != "" {
			o.BaseEndpoint = sdkaws.String(cc.AutoScalingEndpoint)
		}
	})
	e := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if cc.EC2Endpoint != "" {
			o.BaseEndpoint = sdkaws.String(cc.EC2Endpoint)
		}
	})
	opts := awsprovider.Options{
		AutoScaling: as, EC2: e, Region: cfg.Region, RefreshInterval: cc.Interval(), CallTimeout: cc.Timeout(),
		Prices: awsprovider.Prices{OnDemand: cc.Prices, Spot: cc.SpotPrices}, Logger: logger,
	}
	if shell.AWSInterruptionQueue != "" {
		opts.InterruptionQueue = awsprovider.InterruptionQueue{Queue: shell.AWSInterruptionQueue,
			API: sqs.NewFromConfig(cfg, func(o *sqs.Options) {
				if cc.SQSEndpoint != "" {
					o.BaseEndpoint = sdkaws.String(cc.SQSEndpoint)
				}
			})}
	}
	for _, g := range shell.NodeGroups {
		opts.Groups = append(opts.Groups, awsprovider.GroupSpec{Name: g.Name, MinSize: g.Min, MaxSize: g.Max})
	}
	for _, d := range shell.AutoDiscovery {
		if d.Kind == "asg" {
			opts.AutoDiscovery = append(opts.AutoDiscovery, d.Tags)
		}
	}
	return awsprovider.New(opts)
}
