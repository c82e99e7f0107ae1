package autoscalerflags

// defineProvisioning adds the ProvisioningRequest flags: upstream's, and
// two for what upstream hard-codes (the booking time and the expiry).
func (f *Flags) defineProvisioning() {
	fs, o := f.fs, &f.Decision.Autoscaler.ProvisioningRequests
	fs.BoolVar(&o.Enabled, "enable-provisioning-requests", o.Enabled, "Serve autoscaling.x-k8s.io ProvisioningRequests of the classes check-capacity.autoscaling.x-k8s.io and best-effort-atomic-scale-up.autoscaling.x-k8s.io (the CRD must be installed; the chart installs it and turns this on).")
	fs.DurationVar(&o.InitialBackoff, "provisioning-request-initial-backoff-time", o.InitialBackoff, "Wait before a ProvisioningRequest that found no capacity is tried again; each next attempt waits twice as long.")
	fs.DurationVar(&o.MaxBackoff, "provisioning-request-max-backoff-time", o.MaxBackoff, "Longest wait between attempts of a ProvisioningRequest that finds no capacity.")
	fs.DurationVar(&o.BookingTime, "provisioning-request-booking-time", o.BookingTime, "How long the capacity found or added for a ProvisioningRequest is held for its pods (BookingExpired after).")
	fs.DurationVar(&o.ExpiryTime, "provisioning-request-expiry-time", o.ExpiryTime, "A ProvisioningRequest not provisioned this long after its creation fails (Failed, reason Expired).")
	fs.StringVar(&o.ProcessorInstance, "check-capacity-processor-instance", o.ProcessorInstance, "Serve only check-capacity ProvisioningRequests whose parameter processorInstance names this instance, and no atomic ones; empty serves those without the parameter.")
}

// defineCapacityBuffers adds upstream's two CapacityBuffer flags.
func (f *Flags) defineCapacityBuffers() {
	fs, o := f.fs, &f.Decision.Autoscaler.CapacityBuffers
	fs.BoolVar(&o.ControllerEnabled, "capacity-buffer-controller-enabled", o.ControllerEnabled, "Resolve autoscaling.x-k8s.io CapacityBuffers (their pod template or scalable workload, replicas, percentage and limits) and write their status (ReadyForProvisioning); the CRD must be installed.")
	fs.BoolVar(&o.PodInjectionEnabled, "capacity-buffer-pod-injection-enabled", o.PodInjectionEnabled, "Plan with the placeholder pods of CapacityBuffers ready for provisioning: they trigger scale-up and keep their room from scale-down and consolidation, after every real pod; writes their Provisioning condition.")
}
