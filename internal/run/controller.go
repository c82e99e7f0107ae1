package run

import (
	"log/slog"
	"time"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
	"github.com/gpuscale/gpuscale/pkg/controller"
)

// controllerOptions are the live controller's options from the flags.
func controllerOptions(shell ShellOptions, scan time.Duration, auto autoscaler.Options, logger *slog.Logger) controller.Options {
	o := controller.DefaultOptions()
	o.Autoscaler = auto
	o.ScanInterval = scan
	o.Namespace = shell.Namespace
	o.StatusConfigMapName = shell.StatusConfigMapName
	o.WriteStatusConfigMap = shell.WriteStatusConfigMap
	o.Sharding.Peers = shell.ShardPeers
	o.EmitPerNodeGroupMetrics = shell.EmitPerNodeGroupMetrics
	o.MaxPodEvictionTime = shell.MaxPodEvictionTime
	o.APIConcurrency = shell.KubeClientBurst
	o.Address = shell.Address
	o.LeaderElection = shell.LeaderElection
	o.Liveness = shell.Liveness
	o.Logger = logger
	return o
}
